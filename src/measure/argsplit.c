/*
 * argsplit: shell-free word splitting with quotes and backslashes (see argsplit.h). One pass
 * over the line: each word is built in a buffer as long as the line, then copied out.
 */
#include "argsplit.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

void cg_argsplit_free(char **argv)
{
    if (argv == NULL)
        return;
    for (size_t i = 0; argv[i] != NULL; i++)
        free(argv[i]);
    free(argv);
}

/* Appends a copy of word (len bytes) to the growing argv; 0 or CG_ENOMEM. */
static int push_word(char ***argv, size_t *n, size_t *cap, const char *word, size_t len)
{
    if (*n + 2 > *cap) {
        size_t c = *cap ? *cap * 2 : 8;
        char **v = realloc(*argv, c * sizeof(*v));
        if (v == NULL)
            return CG_ENOMEM;
        *argv = v;
        *cap = c;
        v[*n] = NULL; /* terminated even if the copy below fails: the caller frees argv */
    }
    char *w = malloc(len + 1);
    if (w == NULL)
        return CG_ENOMEM;
    memcpy(w, word, len);
    w[len] = '\0';
    (*argv)[(*n)++] = w;
    (*argv)[*n] = NULL;
    return 0;
}

int cg_argsplit(const char *line, char ***argv_out, size_t *argc_out, struct cg_err *err)
{
    *argv_out = NULL;
    *argc_out = 0;
    size_t len = strlen(line);
    if (len > CG_ARGSPLIT_MAX_BYTES)
        return cg_err_set(err, CG_EINPUT, "command longer than %d bytes", CG_ARGSPLIT_MAX_BYTES);
    char *word = malloc(len + 1), **argv = NULL;
    size_t n = 0, cap = 0, w = 0;
    bool in_word = false;
    int rc = 0;
    if (word == NULL)
        return cg_err_set(err, CG_ENOMEM, "out of memory");
    for (size_t i = 0; i < len && rc == 0; i++) {
        char c = line[i];
        if (is_space(c)) {
            if (in_word)
                rc = push_word(&argv, &n, &cap, word, w);
            in_word = false;
            w = 0;
        } else if (c == '\'') {
            const char *end = strchr(line + i + 1, '\'');
            if (end == NULL) {
                rc = cg_err_set(err, CG_EINPUT, "unterminated single quote in '%.200s'", line);
                break;
            }
            size_t k = (size_t)(end - (line + i + 1));
            memcpy(word + w, line + i + 1, k);
            w += k;
            i += k + 1;
            in_word = true;
        } else if (c == '"') {
            size_t j = i + 1;
            for (; j < len && line[j] != '"'; j++) {
                if (line[j] == '\\' && j + 1 < len && (line[j + 1] == '"' || line[j + 1] == '\\'))
                    j++;
                word[w++] = line[j];
            }
            if (j >= len) {
                rc = cg_err_set(err, CG_EINPUT, "unterminated double quote in '%.200s'", line);
                break;
            }
            i = j;
            in_word = true;
        } else if (c == '\\') {
            if (i + 1 >= len) {
                rc = cg_err_set(err, CG_EINPUT, "trailing backslash in '%.200s'", line);
                break;
            }
            word[w++] = line[++i];
            in_word = true;
        } else {
            word[w++] = c;
            in_word = true;
        }
    }
    if (rc == 0 && in_word)
        rc = push_word(&argv, &n, &cap, word, w);
    if (rc == 0 && n == 0)
        rc = cg_err_set(err, CG_EINPUT, "no command in '%.200s'", line);
    if (rc == CG_ENOMEM)
        cg_err_set(err, CG_ENOMEM, "out of memory");
    free(word);
    if (rc != 0) {
        cg_argsplit_free(argv);
        return rc;
    }
    *argv_out = argv;
    *argc_out = n;
    return 0;
}
