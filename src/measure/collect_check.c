/*
 * collect_check: why a canary run failed (see collect_check.h): the run checked once it ended
 * (a non-finite loss, its end, the library's record of a shard it could not write, no shard, no
 * step, too few steps, the world of ranks), the failure file the library records into, the log
 * read for a known infrastructure failure, and the hint the reason of the failure gives
 * (cg_collect_hint, collect.h).
 */
#include "collect_check.h"

#include "buf.h"
#include "fmt.h"
#include "launch_env.h"
#include "multinode.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A process's shard write failure as one line (the path shown escaped). */
static int shard_write_failed(const struct cg_collect_cfg *c, long i, long total,
                              const struct cg_shard_fail *f, enum cg_collect_failed *reason,
                              struct cg_err *err)
{
    struct cg_buf path;
    cg_buf_init(&path, 512);
    int e = cg_term_escape(&path, f->path, 300);
    *reason = CG_COLLECT_FAILED_SHARD_WRITE;
    int rc = cg_err_set(err, CG_ECANARY,
                        "the injection library could not %s its shard in run %ld of %ld: '%s': "
                        "%s (canary process %lld); its output is in '%s'",
                        f->op, i, total, e == 0 ? cg_buf_str(&path) : "?", strerror(f->errno_value),
                        f->pid, c->log);
    cg_buf_release(&path);
    return rc;
}

bool cg_collect_check_ended_after_window(const struct cg_collect_cfg *c,
                                         const struct cg_launch_result *r,
                                         const struct cg_shard_status *st)
{
    bool failed = r->end == CG_LAUNCH_SIGNALED || (r->end == CG_LAUNCH_EXITED && r->exit_code != 0);
    return failed && !c->let_finish && st->all_done && st->steps_seen >= c->warmup + c->steps;
}

/* Why a run failed, as one line and as *reason (what the hint can mend); 0 when it measured
 * enough. fail is the library's record of a shard it could not write (NULL when none). */
int cg_collect_check_run(const struct cg_collect_cfg *c, long i, long total,
                         const struct cg_launch_result *r, const struct cg_shard_status *st,
                         const struct cg_shard_fail *fail, enum cg_collect_failed *reason,
                         struct cg_err *err)
{
    long long seen = (long long)st->steps_seen;
    const char *steps_word = seen == 1 ? "step" : "steps";
    *reason = CG_COLLECT_FAILED_OTHER;
    if (st->nonfinite_loss_step >= 0) {
        double v = st->nonfinite_loss;
        return cg_err_set(err, CG_ECANARY,
                          "canary reported a non-finite loss (%s) in step %lld (counting from 1, "
                          "warm-up included) of run %ld of %ld: training diverged; its output is "
                          "in '%s'",
                          isnan(v) ? "nan"
                          : v > 0  ? "inf"
                                   : "-inf",
                          (long long)st->nonfinite_loss_step + 1, i, total, c->log);
    }
    /* Once every process with steps wrote "done" the gate stops the canary at its next look
     * (every 0.5 s): an exit of its own in between is judged as that stop would have been. */
    bool complete = cg_collect_check_ended_after_window(c, r, st);
    switch (complete ? CG_LAUNCH_STOPPED : r->end) {
    case CG_LAUNCH_TIMEOUT:
        return cg_err_set(err, CG_ECANARY,
                          "canary timed out in run %ld of %ld after %ld s having marked %lld %s "
                          "(stopped with SIGTERM/SIGKILL); its output is in '%s'",
                          i, total, c->timeout_s, seen, steps_word, c->log);
    case CG_LAUNCH_SIGNALED:
        return cg_err_set(err, CG_ECANARY,
                          "canary died of signal %d (%s) in run %ld of %ld after %lld %s; its "
                          "output is in '%s'",
                          r->signal, strsignal(r->signal), i, total, seen, steps_word, c->log);
    case CG_LAUNCH_EXITED:
        if (r->exit_code != 0)
            return cg_err_set(err, CG_ECANARY,
                              "canary exited with status %d in run %ld of %ld after %lld %s; its "
                              "output is in '%s'",
                              r->exit_code, i, total, seen, steps_word, c->log);
        break;
    case CG_LAUNCH_INTERRUPTED:
        return cg_err_set(err, CG_ECANARY, "interrupted in run %ld of %ld", i, total);
    case CG_LAUNCH_STOPPED:
        break; /* stopped once measured: complete, whatever it ended with */
    }
    if (fail != NULL)
        return shard_write_failed(c, i, total, fail, reason, err);
    if (st->n_shards == 0) {
        *reason = CG_COLLECT_FAILED_NOT_LOADED;
        return cg_err_set(err, CG_ECANARY,
                          "the injection library was not loaded in the canary in run %ld of %ld "
                          "(no process wrote a shard); its output is in '%s'",
                          i, total, c->log);
    }
    if (st->n_with_steps == 0)
        *reason = CG_COLLECT_FAILED_NO_STEP;
    if (st->n_with_steps == 0)
        return cg_err_set(err, CG_ECANARY,
                          "canary marked no step in run %ld of %ld (no NVTX range named '%s' in "
                          "the default domain); its output is in '%s'",
                          i, total, c->step_range, c->log);
    if (seen < c->warmup + c->steps)
        return cg_err_set(err, CG_ECANARY,
                          "canary marked %lld %s in run %ld of %ld, fewer than the %ld warm-up + "
                          "%ld measured asked for; its output is in '%s'",
                          seen, steps_word, i, total, c->warmup, c->steps, c->log);
    return 0;
}

/* Creates the run's failure file (CG_ENV_FAIL_FILE) at path, CG_FAIL_FILE_BYTES of NULs written
 * out so the library can record a failure in place even on a full disk. */
int cg_collect_check_make_fail_file(const char *path, struct cg_err *err)
{
    char zeros[CG_FAIL_FILE_BYTES];
    memset(zeros, 0, sizeof(zeros));
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return cg_err_set(err, CG_EIO, "cannot create '%s': %s", path, strerror(errno));
    ssize_t w = write(fd, zeros, sizeof(zeros));
    int e = errno;
    close(fd);
    if (w != (ssize_t)sizeof(zeros))
        return cg_err_set(err, CG_EIO, "cannot write '%s': %s", path,
                          w < 0 ? strerror(e) : "short write");
    return 0;
}

/* Reads the failure file: 1 and f filled when a process recorded a failure, else 0. */
int cg_collect_check_read_fail_file(const char *path, struct cg_shard_fail *f)
{
    char buf[CG_FAIL_FILE_BYTES];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t got = read(fd, buf, sizeof(buf));
    close(fd);
    if (got <= 0)
        return 0;
    int rc = cg_shard_fail_parse(buf, (size_t)got, f);
    if (rc < 0) { /* written, but not as the library writes: still a failure */
        snprintf(f->op, sizeof(f->op), "%s", CG_SHARD_FAIL_WRITE);
        f->errno_value = EIO;
        f->pid = -1;
        snprintf(f->path, sizeof(f->path), "%s", "(an unreadable failure record)");
    }
    return rc != 0;
}

/* A failed run whose log (its last 64 KiB) names a known infrastructure failure that the run's
 * processes and the log's last error support (cg_multinode_infra_failure) says so: a canary
 * failure with that reason and the line it was read from, stated when Slurm said it, else as a
 * guess; never a regression. */
void cg_collect_check_infra(const char *log, char *const *cmd, const struct cg_shard *sh, size_t n,
                            struct cg_err *err)
{
    struct cg_infra_scope scope;
    struct cg_infra_failure f;
    cg_multinode_infra_scope(cmd, sh, n, &scope);
    char *tail = malloc(65536); /* the log's last 64 KiB */
    int fd = tail != NULL ? open(log, O_RDONLY | O_CLOEXEC) : -1;
    if (fd < 0) {
        free(tail);
        return;
    }
    off_t end = lseek(fd, 0, SEEK_END);
    ssize_t got = pread(fd, tail, 65536, end > 65536 ? end - 65536 : 0);
    close(fd);
    bool infra = got > 0 && cg_multinode_infra_failure(tail, (size_t)got, &scope, &f);
    free(tail);
    if (!infra)
        return;
    struct cg_buf line;
    cg_buf_init(&line, 1024);
    if (cg_term_escape(&line, f.line, 160) != 0) { /* never a terminal escape from the log */
        cg_buf_release(&line);
        return;
    }
    char msg[CG_ERR_MSG_MAX];
    snprintf(msg, sizeof(msg), "%s", err->msg);
    if (f.certain)
        cg_err_set(err, CG_ECANARY, "infrastructure failure, not a regression: %s ('%s'); %s",
                   f.reason, cg_buf_str(&line), msg);
    else
        cg_err_set(err, CG_ECANARY,
                   "probably an infrastructure failure, not a regression (a guess from the "
                   "log's line '%s'): %s; %s",
                   cg_buf_str(&line), f.reason, msg);
    cg_buf_release(&line);
}

/* No process ran twice one after the other where its runs would be merged as one run's
 * processes (cg_shard_check_restarts), the message prefixed with the run. */
int cg_collect_check_restarts(long i, long total, const struct cg_shard *sh, size_t n,
                              enum cg_collect_failed *reason, struct cg_err *err)
{
    struct cg_err e;
    cg_err_init(&e);
    int rc = cg_shard_check_restarts(sh, n, &e);
    if (rc == 0)
        return 0;
    *reason = CG_COLLECT_FAILED_OTHER;
    return cg_err_set(err, rc, "run %ld of %ld: %s", i, total, e.msg);
}

/* Every rank of the world the shards report wrote steps, once (cg_shard_check_world), the
 * message prefixed with the run. */
int cg_collect_check_world(const char *inject, long i, long total, const struct cg_shard *sh,
                           size_t n, bool stopped, enum cg_collect_failed *reason,
                           struct cg_err *err)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s", inject);
    char *slash = strrchr(dir, '/');
    if (slash != NULL)
        *slash = '\0';
    struct cg_err e;
    cg_err_init(&e);
    int rc = cg_shard_check_world(sh, n, dir, stopped, &e);
    if (rc == 0)
        return 0;
    *reason = CG_COLLECT_FAILED_OTHER;
    return cg_err_set(err, rc, "run %ld of %ld: %s", i, total, e.msg);
}

/* The hint for a shard the library could not open, write or rename, told by its errno: only
 * the causes the user can mend where shards go; none for the others (EEXIST, EIO, ...). */
static void shard_write_hint(const struct cg_collect_failure *f, const struct cg_say *say)
{
    const char *tmp = getenv("TMPDIR");
    char where[PATH_MAX + 32];
    if (f->shard_dir != NULL)
        snprintf(where, sizeof(where), "--shard-dir ('%s')", f->shard_dir);
    else
        snprintf(where, sizeof(where), "TMPDIR ('%s')", tmp != NULL && *tmp != '\0' ? tmp : "/tmp");
    const char *other = f->shard_dir != NULL ? "give --shard-dir" : "point TMPDIR at";
    switch (f->shard_errno) {
    case ENOSPC:
    case EDQUOT:
        cg_say(say, CG_SAY_INFO,
               "shards are written under %s: free space there, or %s a writable directory with "
               "room%s",
               where, other,
               f->shard_dir != NULL ? " (every node must write to it at the same path)" : "");
        return;
    case EACCES:
    case EPERM:
    case EROFS:
        cg_say(say, CG_SAY_INFO,
               "shards are written under %s, which the canary may not write to: %s a directory "
               "the canary can write (its user, or a container's, needs write access there)",
               where, other);
        return;
    case EFBIG:
        cg_say(say, CG_SAY_INFO,
               "a file size limit (ulimit -f, systemd's LimitFSIZE) stopped the shard: raise it "
               "for the canary ('ulimit -f unlimited' before the gate runs)");
        return;
    case ENOENT:
    case ENOTDIR:
        cg_say(say, CG_SAY_INFO,
               "the run's shard directory under %s was removed or replaced while the canary ran "
               "(by the canary, or something that cleans that directory): %s a directory nothing "
               "else cleans",
               where, other);
        return;
    default:
        return;
    }
}

void cg_collect_hint(const struct cg_collect_failure *f, const struct cg_err *err,
                     const char *step_range, const struct cg_say *say)
{
    if (err->code != CG_ECANARY)
        return;
    if (f->reason == CG_COLLECT_FAILED_NOT_LOADED && f->steps_python && f->python_flag[0] != '\0') {
        cg_say(say, CG_SAY_INFO,
               "python's %s keeps it from loading canary-gate's sitecustomize, which marks "
               "the optimizer steps (and, in a script that calls neither NVTX nor CUDA, is "
               "what loads the library): drop %s, or mark each training step with an NVTX "
               "range",
               f->python_flag, f->python_flag);
        return;
    }
    if (f->reason == CG_COLLECT_FAILED_NOT_LOADED && f->steps_from == CG_STEPS_FROM_NVTX) {
        cg_say(say, CG_SAY_INFO,
               "with --steps-from nvtx the library is loaded by the canary's first NVTX call "
               "(or CUDA call): a canary that makes none never loads it. Mark each training "
               "step with an NVTX range, or for a PyTorch script drop --steps-from nvtx so that "
               "its optimizer steps are marked. (A canary that does call NVTX must keep the "
               "environment the gate gives it: " CG_ENV_NVTX_INJECTION ", " CG_ENV_CUDA_INJECTION
               " and the CANARY_GATE_* variables.)");
        return;
    }
    if (f->reason == CG_COLLECT_FAILED_NOT_LOADED) {
        cg_say(say, CG_SAY_INFO,
               "the canary must keep the environment the gate gives it "
               "(" CG_ENV_NVTX_INJECTION ", " CG_ENV_CUDA_INJECTION " and the "
               "CANARY_GATE_* variables) and call NVTX or CUDA: a container needs "
               "each passed on ('docker run -e " CG_ENV_NVTX_INJECTION " -e " CG_ENV_CUDA_INJECTION
               " -e " CG_ENV_SHARD_DIR " ...' with the library "
               "and the shard directory mounted at the same paths), sudo needs "
               "'sudo -E' or '--preserve-env', and 'env -i' clears them");
        return;
    }
    if (f->reason == CG_COLLECT_FAILED_SHARD_WRITE) {
        shard_write_hint(f, say);
        return;
    }
    if (f->reason != CG_COLLECT_FAILED_NO_STEP)
        return;
    if (step_range == NULL)
        step_range = "step";
    if (f->steps_python && f->step_optimizer > 1 && f->python_flag[0] == '\0') {
        cg_say(say, CG_SAY_INFO,
               "--step-optimizer %ld counts the optimizer that is number %ld to call step() in "
               "the script: a script that steps fewer marks no step (the canary's output says "
               "how many it stepped); give a number no larger than that, or leave it out for "
               "the first",
               f->step_optimizer, f->step_optimizer);
        return;
    }
    if (f->steps_from == CG_STEPS_FROM_OPTIMIZER) {
        cg_say(say, CG_SAY_INFO,
               "with --steps-from optimizer a step is a PyTorch "
               "optimizer.step(): the canary must be a Python script that imports "
               "torch.optim and steps an optimizer (with 'python -I' or '-S' Python "
               "skips the sitecustomize that marks them), or mark each step itself with "
               "an NVTX range named '%s' and use --steps-from auto",
               step_range);
        return;
    }
    cg_say(say, CG_SAY_INFO,
           "two ways to mark steps: (1) an NVTX range named '%s' in the "
           "default domain around each training step, e.g. in PyTorch "
           "torch.cuda.nvtx.range_push(\"%s\") at its start and "
           "torch.cuda.nvtx.range_pop() at its end; (2) for a PyTorch script, nothing: "
           "each optimizer.step() ends a step %s",
           step_range, step_range,
           f->steps_from == CG_STEPS_FROM_NVTX
               ? "when --steps-from is auto (the default) or optimizer, not nvtx as here"
           : f->steps_python && f->python_flag[0] != '\0'
               ? "(the canary called none: python's option given here keeps it from "
                 "loading the sitecustomize that marks them; drop it)"
           : f->steps_python
               ? "(the canary called none: no optimizer stepped, or 'python -I' or '-S' "
                 "skipped the sitecustomize that marks them, or the optimizers stepped only in "
                 "processes forked without exec, torch.multiprocessing's default 'fork' start "
                 "method as in Hogwild training, whose steps are not seen: start them with "
                 "'spawn')"
               : "once canary-gate is built with the NVTX headers (this one has no "
                 "python/sitecustomize.py and libcanary-nvtx-shim.so beside it)");
}
