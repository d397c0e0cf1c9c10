/* workdir: see workdir.h. */
#include "workdir.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

int cg_workdir_setup(void **state)
{
    struct cg_workdir *w = calloc(1, sizeof(*w));
    if (w == NULL)
        return -1;
    snprintf(w->path, sizeof(w->path), "/tmp/cg-test-XXXXXX");
    if (mkdtemp(w->path) == NULL) {
        free(w);
        return -1;
    }
    *state = w;
    return 0;
}

int cg_workdir_teardown(void **state)
{
    struct cg_workdir *w = *state;
    const char *argv[] = {"/bin/rm", "-rf", w->path, NULL};
    struct cg_proc *p = malloc(sizeof(*p));
    if (p != NULL)
        cg_proc_run(NULL, argv, NULL, p);
    free(p);
    free(w);
    return 0;
}

const char *cg_workdir_in(const struct cg_workdir *w, const char *name)
{
    static char buf[4][512];
    static int i;
    i = (i + 1) % 4;
    snprintf(buf[i], sizeof(buf[i]), "%s/%s", w->path, name);
    return buf[i];
}

bool cg_workdir_exists(const struct cg_workdir *w, const char *name)
{
    struct stat st;
    return stat(cg_workdir_in(w, name), &st) == 0;
}

const char *cg_workdir_read(const struct cg_workdir *w, const char *name)
{
    static char text[1 << 17];
    FILE *fp = fopen(cg_workdir_in(w, name), "rb");
    assert_non_null(fp);
    size_t k = fread(text, 1, sizeof(text) - 1, fp);
    text[k] = '\0';
    fclose(fp);
    return text;
}

int cg_workdir_run(const struct cg_workdir *w, const char *program, const char *const *env,
                   const char *const *args, struct cg_proc *p)
{
    const char *argv[64] = {program};
    size_t n = 1;
    for (; args != NULL && args[n - 1] != NULL && n < 63; n++)
        argv[n] = args[n - 1];
    argv[n] = NULL;
    assert_int_equal(cg_proc_run(w->path, argv, env, p), 0);
    return p->exit_code;
}
