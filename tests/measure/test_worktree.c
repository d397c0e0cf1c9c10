/*
 * test_worktree: the paths an argument of 'canary-gate bisect' names inside the user's checkout
 * (cg_worktree_paths_in), in a checkout whose path holds a blank. A shell line's words are read
 * as /bin/sh reads them: single and double quotes and backslash escapes make one word of a path
 * with blanks, no expansion.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "worktree.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char root[] = "/tmp/cg-worktree-XXXXXX";
static char top[PATH_MAX]; /* root's "my repo", resolved */

static int make_checkout(void **state)
{
    (void)state;
    char path[PATH_MAX + 32];
    if (mkdtemp(root) == NULL)
        return -1;
    snprintf(path, sizeof(path), "%s/my repo", root);
    if (mkdir(path, 0700) != 0 || realpath(path, top) == NULL)
        return -1;
    snprintf(path, sizeof(path), "%s/canary.sh", top);
    FILE *f = fopen(path, "w");
    if (f == NULL)
        return -1;
    fclose(f);
    return 0;
}

static int remove_checkout(void **state)
{
    (void)state;
    char path[PATH_MAX + 32];
    snprintf(path, sizeof(path), "%s/canary.sh", top);
    unlink(path);
    rmdir(top);
    rmdir(root);
    return 0;
}

/* 'sh -c "exec '/x/my repo/canary.sh'"': the path is read whole, inside the checkout, in every
 * way sh quotes it; it was read only up to the blank ('/x/my', outside the checkout: nothing
 * found, or a cut path warned about). */
static void test_worktree__shell_words_honour_quotes_and_escapes(void **state)
{
    (void)state;
    char escaped[PATH_MAX]; /* top with each blank as "\ " */
    size_t e = 0;
    for (const char *c = top; *c != '\0' && e + 2 < sizeof(escaped); c++) {
        if (*c == ' ')
            escaped[e++] = '\\';
        escaped[e++] = *c;
    }
    escaped[e] = '\0';
    static const struct {
        const char *line;  /* %s: the checkout's top */
        const char *found; /* the path named, %s the top; NULL: none */
        const char *rel;
    } cases[] = {
        {"exec '%s/canary.sh'", "%s/canary.sh", "canary.sh"},
        {"exec \"%s/canary.sh\" --steps 3", "%s/canary.sh", "canary.sh"},
        {"cd \"%s\" && ./canary.sh | cat", "%s", ""},
        {"X='%s/canary.sh' run", "%s/canary.sh", "canary.sh"},
        {"exec --data=\"%s/canary.sh\";true", "%s/canary.sh", "canary.sh"},
        {"PATH=/usr/bin:'%s':/bin canary.sh", "%s", ""},
        {"exec \"%s\"'/canary.sh'", "%s/canary.sh", "canary.sh"},
        {"exec \"%s/\\\"x\"", "%s/\"x", "\"x"}, /* an escaped quote is the name's */
        {"exec '%s/x\\'", "%s/x\\", "x\\"},     /* no escape in single quotes */
        {"echo '%s/canary.sh' | wc", "%s/canary.sh", "canary.sh"},
        {"exec \"$HOME%s/canary.sh\"", NULL, NULL}, /* no expansion: not a path */
        {"exec ./canary.sh '%s", "%s", ""},         /* an open quote runs to the end */
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        char line[3 * PATH_MAX], want[PATH_MAX + 32];
        snprintf(line, sizeof(line), cases[c].line, top);
        struct cg_worktree_path found[4];
        size_t k = cg_worktree_paths_in(top, NULL, line, true, found, 4);
        if (cases[c].found == NULL) {
            if (k != 0)
                fail_msg("'%s': found '%s', none expected", line, found[0].path);
            continue;
        }
        snprintf(want, sizeof(want), cases[c].found, top);
        if (k != 1 || strcmp(found[0].path, want) != 0 || strcmp(found[0].rel, cases[c].rel) != 0)
            fail_msg("'%s': %zu found ('%s', '%s'), one expected: '%s' ('%s')", line, k,
                     k > 0 ? found[0].path : "", k > 0 ? found[0].rel : "", want, cases[c].rel);
    }
    /* a blank escaped with a backslash outside quotes */
    char line[3 * PATH_MAX], want[PATH_MAX + 32];
    snprintf(line, sizeof(line), "exec %s/canary.sh --x", escaped);
    snprintf(want, sizeof(want), "%s/canary.sh", top);
    struct cg_worktree_path found[4];
    size_t k = cg_worktree_paths_in(top, NULL, line, true, found, 4);
    if (k != 1 || strcmp(found[0].path, want) != 0)
        fail_msg("'%s': %zu found ('%s'), '%s' expected", line, k, k > 0 ? found[0].path : "",
                 want);
    /* the string of 'sh -c' given as one argument: read as a line, since it names no file */
    snprintf(line, sizeof(line), "exec '%s/canary.sh'", top);
    k = cg_worktree_paths_in(top, NULL, line, false, found, 4);
    if (k != 1 || strcmp(found[0].path, want) != 0)
        fail_msg("one argument '%s': %zu found ('%s'), '%s' expected", line, k,
                 k > 0 ? found[0].path : "", want);
    /* one argument that names a file with a blank is that file, as written */
    k = cg_worktree_paths_in(top, NULL, want, false, found, 4);
    if (k != 1 || strcmp(found[0].path, want) != 0)
        fail_msg("one argument '%s': %zu found, itself expected", want, k);
}

/* A path glued to an option, quoted in a shell line ('python -X"/x/my repo/c.py"', '-I'/x/inc''):
 * once quotes were removed the word was '-X/x/...', whose '/' follows the option's letters, and
 * no path was seen (the quoted form was found only while words were split at quotes; the
 * unquoted '-I/x/inc' never was). A word that begins with '-' names a path right after its
 * option's letters too; one that does not begin with '-' does not. */
static void test_worktree__a_path_glued_to_an_option_is_found(void **state)
{
    (void)state;
    static const struct {
        const char *line;  /* %s: the checkout's top */
        bool shell;        /* read as a shell line, else as one argument */
        const char *found; /* the path named, %s the top; NULL: none */
        const char *rel;
    } cases[] = {
        {"python -X\"%s/canary.sh\" c.py", true, "%s/canary.sh", "canary.sh"},
        {"cc -I'%s' -c x.c", true, "%s", ""},
        {"cc --include-dir'%s/canary.sh'", true, "%s/canary.sh", "canary.sh"},
        {"cc -isystem\"%s\":/usr/include", true, "%s", ""},
        {"-I%s/canary.sh", false, "%s/canary.sh", "canary.sh"},
        {"x-I'%s/canary.sh'", true, NULL, NULL},        /* no option */
        {"cc -I$HOME'%s/canary.sh'", true, NULL, NULL}, /* no expansion: not a path */
        {"cc -I.'%s/canary.sh'", true, NULL, NULL},     /* relative, not the checkout's */
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        char line[3 * PATH_MAX], want[PATH_MAX + 32];
        snprintf(line, sizeof(line), cases[c].line, top);
        struct cg_worktree_path found[4];
        size_t k = cg_worktree_paths_in(top, NULL, line, cases[c].shell, found, 4);
        if (cases[c].found == NULL) {
            if (k != 0)
                fail_msg("'%s': found '%s', none expected", line, found[0].path);
            continue;
        }
        snprintf(want, sizeof(want), cases[c].found, top);
        if (k != 1 || strcmp(found[0].path, want) != 0 || strcmp(found[0].rel, cases[c].rel) != 0)
            fail_msg("'%s': %zu found ('%s', '%s'), one expected: '%s' ('%s')", line, k,
                     k > 0 ? found[0].path : "", k > 0 ? found[0].rel : "", want, cases[c].rel);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_worktree__shell_words_honour_quotes_and_escapes),
        cmocka_unit_test(test_worktree__a_path_glued_to_an_option_is_found),
    };
    return cmocka_run_group_tests(tests, make_checkout, remove_checkout);
}
