/* proc: see proc.h. */
#include "proc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void slurp(int fd, char *dst, size_t cap)
{
    ssize_t got = pread(fd, dst, cap - 1, 0);
    dst[got > 0 ? got : 0] = '\0';
}

int cg_proc_run(const char *cwd, const char *const *argv, const char *const *env,
                struct cg_proc *p)
{
    char out_path[] = "/tmp/cg-proc-out-XXXXXX", err_path[] = "/tmp/cg-proc-err-XXXXXX";
    int fo = mkstemp(out_path), fe = mkstemp(err_path);
    int rc = -1;
    if (fo < 0 || fe < 0)
        goto done;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        goto done;
    if (pid == 0) {
        if (cwd != NULL && chdir(cwd) != 0)
            _exit(127);
        for (size_t i = 0; env != NULL && env[i] != NULL; i++)
            putenv((char *)env[i]);
        dup2(fo, STDOUT_FILENO);
        dup2(fe, STDERR_FILENO);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    p->exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    slurp(fo, p->out, sizeof(p->out));
    slurp(fe, p->err, sizeof(p->err));
    rc = 0;
done:
    if (fo >= 0) {
        close(fo);
        unlink(out_path);
    }
    if (fe >= 0) {
        close(fe);
        unlink(err_path);
    }
    return rc;
}
