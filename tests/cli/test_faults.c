/*
 * test_faults: the gate under faults it does not control, driving the built canary-gate binary
 * (and the shard functions for what cannot be staged from outside):
 *   - an output directory it may not write, and a full disk (/dev/full, and a file size limit
 *     for regular files): the previous report, verdict or artifact stays as it was, no temporary
 *     file is left, the error names the path and the exit code is 3;
 *   - a canary that floods stdout and stderr with hundreds of MiB: the tool's peak RSS stays far
 *     below that (its output goes to the log, never through the tool's memory);
 *   - SIGTERM or SIGINT to the tool mid-run: the canary's whole process group is gone (strays
 *     that ignore the signal included), no temporary file or shard directory is left, completed
 *     runs are written whole, an interrupted first run writes nothing;
 *   - a rank killed mid-run leaves a cut shard: its complete lines count, the other ranks count;
 *   - a step of zero or negative duration (a clock step) is rejected, not averaged in;
 *   - a baseline of a newer schema_version: exit 2 naming the version;
 *   - processes that escape the canary's process group (setsid, a double-forked daemon) are
 *     ended with the run and counted;
 *   - the injection library never loaded (the environment dropped): a message that says so;
 *     its shard not writable (the directory replaced by a file, a file size limit as on a full
 *     disk): the path and the errno.
 * Helper canaries: tests/faults/fault_helper.c and tests/canaries/nvtx_canary.c. Tests that run
 * a canary need the injection library and are skipped when it was not built (no NVTX headers).
 * When run as root, the unwritable-directory test runs the tool as the user "nobody" (uid 65534),
 * for whom permissions apply.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "artifact.h"
#include "fixtures.h"
#include "shard.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define HELPER CG_BINARY_DIR "/tests/faults/fault-helper"
#define CANARY CG_BINARY_DIR "/tests/canaries/nvtx-canary"
#define INJECT CG_BINARY_DIR "/libcanary-inject.so"
#define NOBODY 65534
#define MIB (1024L * 1024L)

/* ---- running the tool ------------------------------------------------------------------------ */

struct spawn_opts {
    bool as_nobody;        /* drop to uid/gid 65534 first (when root) */
    long fsize_limit;      /* RLIMIT_FSIZE in bytes, 0: none */
    const char *tmpdir;    /* TMPDIR for the tool, or NULL */
    const char *out_path;  /* the tool's standard output, NULL: /dev/null */
};

struct result {
    int exit_code;         /* 128 + signal when killed */
    long maxrss_kib;       /* of the tool and the children it waited for */
    char err[16384];
};

struct child {
    pid_t pid;
    int err_fd;
};

static void spawn(const char *tool, const char *const *args, const struct spawn_opts *o,
                  struct child *c)
{
    char errpath[] = "/tmp/cg-faults-stderr-XXXXXX";
    const char *argv[64] = {tool};
    size_t n = 1;
    for (; args[n - 1] != NULL && n < 63; n++)
        argv[n] = args[n - 1];
    argv[n] = NULL;
    c->err_fd = mkstemp(errpath);
    assert_true(c->err_fd >= 0);
    unlink(errpath);
    c->pid = fork();
    assert_true(c->pid >= 0);
    if (c->pid != 0)
        return;
    dup2(c->err_fd, 2);
    int null_fd = open(o != NULL && o->out_path != NULL ? o->out_path : "/dev/null", O_WRONLY);
    dup2(null_fd, 1);
    if (o != NULL && o->tmpdir != NULL)
        setenv("TMPDIR", o->tmpdir, 1);
    if (o != NULL && o->fsize_limit > 0) {
        struct rlimit rl = {(rlim_t)o->fsize_limit, (rlim_t)o->fsize_limit};
        /* as a shell's `ulimit -f` leaves it: SIGXFSZ at its default, which ends a process that
         * writes past the limit unless it ignores the signal itself */
        signal(SIGXFSZ, SIG_DFL);
        if (setrlimit(RLIMIT_FSIZE, &rl) != 0)
            _exit(125);
    }
    if (o != NULL && o->as_nobody && geteuid() == 0 &&
        (setgroups(0, NULL) != 0 || setgid(NOBODY) != 0 || setuid(NOBODY) != 0))
        _exit(125);
    execv(tool, (char *const *)argv);
    _exit(126);
}

static void reap(struct child *c, struct result *r)
{
    int st = 0;
    struct rusage ru;
    memset(&ru, 0, sizeof(ru));
    pid_t w;
    while ((w = wait4(c->pid, &st, 0, &ru)) < 0 && errno == EINTR) {
    }
    assert_int_equal(w, c->pid);
    r->exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    r->maxrss_kib = ru.ru_maxrss;
    ssize_t got = pread(c->err_fd, r->err, sizeof(r->err) - 1, 0);
    r->err[got > 0 ? got : 0] = '\0';
    close(c->err_fd);
}

static void run_tool(const char *const *args, const struct spawn_opts *o, struct result *r)
{
    struct child c;
    spawn(CG_TOOL_PATH, args, o, &c);
    reap(&c, r);
}

static void expect_exit(const struct result *r, int code)
{
    if (r->exit_code != code)
        fail_msg("exit %d, expected %d; stderr:\n%s", r->exit_code, code, r->err);
}

static void expect_in_err(const struct result *r, const char *text)
{
    if (strstr(r->err, text) == NULL)
        fail_msg("stderr does not mention '%s':\n%s", text, r->err);
}

/* ---- files ----------------------------------------------------------------------------------- */

/* dst = dir/name; fails the test when it does not fit. */
static void join(char *dst, size_t n, const char *dir, const char *name)
{
    int k = snprintf(dst, n, "%s/%s", dir, name);
    assert_true(k > 0 && (size_t)k < n);
}

/* A fresh world-readable directory under $TMPDIR (or /tmp); path receives it. */
static void make_dir(char *path, size_t n)
{
    const char *t = getenv("TMPDIR");
    snprintf(path, n, "%s/cg-faults-XXXXXX", t != NULL && *t != '\0' ? t : "/tmp");
    assert_non_null(mkdtemp(path));
    assert_int_equal(chmod(path, 0755), 0);
}

static void remove_tree(const char *path)
{
    DIR *d = opendir(path);
    if (d != NULL) {
        struct dirent *e;
        char sub[PATH_MAX];
        chmod(path, 0755);
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            snprintf(sub, sizeof(sub), "%s/%s", path, e->d_name);
            struct stat st;
            if (lstat(sub, &st) == 0 && S_ISDIR(st.st_mode))
                remove_tree(sub);
            else
                unlink(sub);
        }
        closedir(d);
    }
    rmdir(path);
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_int_equal(fputs(text, f) >= 0, 1);
    assert_int_equal(fclose(f), 0);
}

/* The file's contents (malloc'ed), or NULL when it cannot be read. */
static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return NULL;
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    assert_non_null(buf);
    size_t got;
    while ((got = fread(buf + len, 1, cap - len - 1, f)) > 0) {
        len += got;
        if (cap - len - 1 == 0) {
            char *bigger = realloc(buf, cap * 2);
            assert_non_null(bigger);
            buf = bigger;
            cap *= 2;
        }
    }
    buf[len] = '\0';
    fclose(f);
    return buf;
}

static void expect_file(const char *path, const char *text)
{
    char *got = slurp(path);
    if (got == NULL)
        fail_msg("'%s' is gone", path);
    if (strcmp(got, text) != 0)
        fail_msg("'%s' changed:\n%s", path, got);
    free(got);
}

/* Fails when dir holds a name containing ".tmp" (a half-written file) or anything but the given
 * names (NULL-terminated). */
static void expect_only(const char *dir, const char *const *names)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        bool known = false;
        for (size_t i = 0; names[i] != NULL; i++)
            known = known || strcmp(e->d_name, names[i]) == 0;
        if (!known || strstr(e->d_name, ".tmp") != NULL) {
            closedir(d);
            fail_msg("'%s/%s' was left behind", dir, e->d_name);
        }
    }
    closedir(d);
}

/* Saves a fixture artifact (seeded) to path, readable by everyone. */
static void save_fixture(const char *path, uint64_t seed, double mean_ns)
{
    struct cg_artifact a;
    struct cg_err err;
    struct cg_fixture f = {5, 20, mean_ns, 0.01, 0.02, 512, -1, 100 * MIB, 3, seed};
    cg_artifact_init(&a);
    cg_err_init(&err);
    assert_int_equal(cg_fixture_make(&a, &f), 0);
    if (cg_artifact_save(path, &a, &err) != 0)
        fail_msg("%s", err.msg);
    assert_int_equal(chmod(path, 0644), 0);
    cg_artifact_release(&a);
}

/* The files of one test: a fresh directory with an output directory "out" and a TMPDIR "tmp" in
 * it, and, when asked, two fixture artifacts "base.json" and "cur.json" of the same canary. */
struct scene {
    char dir[PATH_MAX], out[PATH_MAX], tmp[PATH_MAX], base[PATH_MAX], cur[PATH_MAX];
};

static void scene_open(struct scene *s, bool fixtures)
{
    make_dir(s->dir, sizeof(s->dir));
    join(s->out, sizeof(s->out), s->dir, "out");
    join(s->tmp, sizeof(s->tmp), s->dir, "tmp");
    join(s->base, sizeof(s->base), s->dir, "base.json");
    join(s->cur, sizeof(s->cur), s->dir, "cur.json");
    assert_int_equal(mkdir(s->out, 0755), 0);
    assert_int_equal(mkdir(s->tmp, 0755), 0);
    if (fixtures) {
        save_fixture(s->base, 1, 10e6);
        save_fixture(s->cur, 2, 10e6);
    }
}

static void load(const char *path, struct cg_artifact *a)
{
    struct cg_err err;
    cg_err_init(&err);
    if (cg_artifact_load(path, a, &err) != 0)
        fail_msg("%s", err.msg);
}

static bool have_collector(void)
{
    return access(INJECT, R_OK) == 0 && access(CANARY, X_OK) == 0 && access(HELPER, X_OK) == 0;
}

#define NEED_COLLECTOR()                                                                           \
    do {                                                                                           \
        if (!have_collector()) {                                                                   \
            print_message("skipped: no injection library or test canary (built without NVTX)\n"); \
            skip();                                                                                \
        }                                                                                          \
    } while (0)

/* ---- processes ------------------------------------------------------------------------------- */

/* State and process group of a live process from /proc; false when it does not exist. */
static bool proc_stat(long pid, char *state, long *pgrp)
{
    char path[64], buf[1024];
    snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return false;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return false;
    buf[n] = '\0';
    const char *p = strrchr(buf, ')'); /* the command name may hold spaces and parentheses */
    long ppid = 0;
    return p != NULL && sscanf(p + 1, " %c %ld %ld", state, &ppid, pgrp) == 3;
}

/* True while some process (zombies excluded) is in process group pgid. */
static bool group_alive(long pgid)
{
    DIR *d = opendir("/proc");
    assert_non_null(d);
    struct dirent *e;
    bool alive = false;
    while (!alive && (e = readdir(d)) != NULL) {
        char *end = NULL;
        long pid = strtol(e->d_name, &end, 10);
        char state;
        long pgrp;
        if (end != e->d_name && *end == '\0' && proc_stat(pid, &state, &pgrp))
            alive = pgrp == pgid && state != 'Z' && state != 'X';
    }
    closedir(d);
    return alive;
}

static bool pid_alive(long pid)
{
    char state;
    long pgrp;
    return proc_stat(pid, &state, &pgrp) && state != 'Z' && state != 'X';
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* Waits (up to a minute, for slow sanitizer builds) until path has at least n lines. */
static void wait_for_lines(const char *path, int n)
{
    for (int i = 0; i < 6000; i++) {
        char *text = slurp(path);
        int lines = 0;
        for (const char *p = text; p != NULL && *p; p++)
            lines += *p == '\n';
        free(text);
        if (lines >= n)
            return;
        sleep_ms(10);
    }
    fail_msg("'%s' never got %d lines", path, n);
}

/* Reads "<canary pid> <stray pid>" lines; returns how many pairs were read. */
static size_t read_pids(const char *path, long pids[][2], size_t max)
{
    FILE *f = fopen(path, "r");
    size_t n = 0;
    assert_non_null(f);
    while (n < max && fscanf(f, "%ld %ld", &pids[n][0], &pids[n][1]) == 2)
        n++;
    fclose(f);
    return n;
}

/* ---- an output directory the tool may not write ---------------------------------------------- */

/* Writes a report, a JSON verdict and a merged artifact over previous ones in the scene's "out"
 * directory under the fault o sets up (made read-only first when read_only): each command fails
 * with exit 3 naming its path, and the previous files stay as they were. */
static void expect_previous_outputs_kept(const struct spawn_opts *o, bool read_only)
{
    struct scene sc;
    char report[PATH_MAX], verdict[PATH_MAX], merged[PATH_MAX], quoted[PATH_MAX + 2];
    scene_open(&sc, true);
    join(report, sizeof(report), sc.out, "report.md");
    join(verdict, sizeof(verdict), sc.out, "verdict.json");
    join(merged, sizeof(merged), sc.out, "merged.json");
    write_file(report, "the previous report\n");
    write_file(verdict, "{\"previous\": true}\n");
    write_file(merged, "{\"previous\": \"artifact\"}\n");
    if (read_only)
        assert_int_equal(chmod(sc.out, 0555), 0);

    struct result r;
    const char *compare[] = {"compare", sc.base, sc.cur, "--report", report, "--json", verdict,
                             NULL};
    run_tool(compare, o, &r);
    expect_exit(&r, 3);
    snprintf(quoted, sizeof(quoted), "'%s'", report);
    expect_in_err(&r, quoted);
    expect_file(report, "the previous report\n");
    expect_file(verdict, "{\"previous\": true}\n");

    const char *merge[] = {"merge", "-o", merged, sc.base, sc.cur, NULL};
    run_tool(merge, o, &r);
    expect_exit(&r, 3);
    snprintf(quoted, sizeof(quoted), "'%s'", merged);
    expect_in_err(&r, quoted);
    expect_file(merged, "{\"previous\": \"artifact\"}\n");
    const char *names[] = {"report.md", "verdict.json", "merged.json", NULL};
    expect_only(sc.out, names); /* no temporary file left */
    remove_tree(sc.dir);
}

static void test_faults__unwritable_directory_keeps_previous_outputs(void **state)
{
    (void)state;
    struct spawn_opts o = {true, 0, NULL, NULL};
    expect_previous_outputs_kept(&o, true);
}

/* ---- a full disk ----------------------------------------------------------------------------- */

static void expect_dev_full_intact(void)
{
    struct stat st;
    assert_int_equal(stat("/dev/full", &st), 0);
    assert_true(S_ISCHR(st.st_mode)); /* written in place, never replaced by a file */
}

static void test_faults__dev_full_fails_naming_the_path(void **state)
{
    (void)state;
    struct scene sc;
    scene_open(&sc, true);
    static const char *const outputs[][2] = {{"--report", "/dev/full"}, {"--json", "/dev/full"}};
    struct result r;
    for (size_t i = 0; i < 2; i++) {
        const char *args[] = {"compare", sc.base, sc.cur, outputs[i][0], outputs[i][1], NULL};
        run_tool(args, NULL, &r);
        expect_exit(&r, 3);
        expect_in_err(&r, "'/dev/full'");
        expect_dev_full_intact();
    }
    const char *merge[] = {"merge", "-o", "/dev/full", sc.base, sc.cur, NULL};
    run_tool(merge, NULL, &r);
    expect_exit(&r, 3);
    expect_in_err(&r, "'/dev/full'");
    expect_dev_full_intact();
    remove_tree(sc.dir);
}

/* A regular file on a full disk: RLIMIT_FSIZE makes writes fail (EFBIG) past 512 bytes. */
static void test_faults__full_disk_keeps_previous_outputs(void **state)
{
    (void)state;
    struct spawn_opts o = {false, 512, NULL, NULL};
    expect_previous_outputs_kept(&o, false);
}

/* Standard output that cannot take the text (a full disk, /dev/full, past `ulimit -f`): with
 * SIGXFSZ ignored nothing ended the tool any more, and a report cut short went with exit 0; now
 * the failed write is said in one line and the exit is 3. */
static void test_faults__standard_output_that_fails_is_said(void **state)
{
    (void)state;
    struct spawn_opts o = {false, 0, NULL, "/dev/full"};
    struct result r;
    const char *help[] = {"--help", NULL};
    run_tool(help, &o, &r);
    expect_exit(&r, 3);
    expect_in_err(&r, "canary-gate: cannot write to standard output: No space left on device");
    const char *usage[] = {"compare", "--help", NULL};
    run_tool(usage, &o, &r);
    expect_exit(&r, 3);
    expect_in_err(&r, "cannot write to standard output");
}

/* The artifact of `run` on a full disk: the canary's shards and log are small and fit, the
 * artifact does not. */
static void test_faults__full_disk_run_keeps_previous_artifact(void **state)
{
    (void)state;
    NEED_COLLECTOR();
    struct scene sc;
    char art[PATH_MAX], log[PATH_MAX], quoted[PATH_MAX + 2];
    scene_open(&sc, false);
    join(art, sizeof(art), sc.out, "run.json");
    join(log, sizeof(log), sc.dir, "run.log");
    write_file(art, "{\"previous\": \"artifact\"}\n");

    struct spawn_opts o = {false, 1024, sc.tmp, NULL};
    struct result r;
    const char *args[] = {"run", "--runs", "3", "--steps", "4", "--warmup", "0", "--out", art,
                          "--log", log, "--", CANARY, "--steps", "4", "--step-ms", "1", NULL};
    run_tool(args, &o, &r);
    expect_exit(&r, 3);
    snprintf(quoted, sizeof(quoted), "'%s'", art);
    expect_in_err(&r, quoted);
    expect_file(art, "{\"previous\": \"artifact\"}\n");
    const char *names[] = {"run.json", NULL};
    expect_only(sc.out, names);
    const char *none[] = {NULL};
    expect_only(sc.tmp, none); /* the shard directory is gone */
    remove_tree(sc.dir);
}

/* Under a file size limit (`ulimit -f`, systemd's LimitFSIZE) the tool ignores SIGXFSZ, so that a
 * write past the limit fails (EFBIG) as on a full disk; the canary it starts gets the signal's
 * default disposition back, as it would have had without the gate (an ignored signal stays
 * ignored across exec). */
static void test_faults__the_canary_gets_sigxfsz_at_its_default(void **state)
{
    (void)state;
    NEED_COLLECTOR();
    struct scene sc;
    char art[PATH_MAX], log[PATH_MAX], sigs[PATH_MAX], text[256];
    scene_open(&sc, false);
    join(art, sizeof(art), sc.dir, "sigs.json");
    join(log, sizeof(log), sc.dir, "sigs.log");
    join(sigs, sizeof(sigs), sc.dir, "sigs.txt");
    struct result r;
    const char *args[] = {"run",  "--runs",  "1", "--steps",   "3",    "--warmup", "0",  "--out",
                          art,    "--log",   log, "--",        HELPER, "signals",  sigs, "--",
                          CANARY, "--steps", "3", "--step-ms", "1",    NULL};
    run_tool(args, NULL, &r);
    expect_exit(&r, 0);
    FILE *f = fopen(sigs, "r");
    assert_non_null(f);
    size_t got = fread(text, 1, sizeof(text) - 1, f);
    text[got] = '\0';
    fclose(f);
    if (strstr(text, "SIGXFSZ default") == NULL || strstr(text, "SIGPIPE default") == NULL)
        fail_msg("the canary's dispositions:\n%s", text);
    remove_tree(sc.dir);
}

/* Runs `canary-gate run --runs 1 --steps STEPS --warmup 0 -- CMD...` writing NAME.json (its path
 * into art) and NAME.log in the scene's directory. */
static void run_once(const struct scene *sc, const char *name, const char *steps,
                     const char *const *cmd, char *art, struct result *r)
{
    char file[64], log[PATH_MAX];
    snprintf(file, sizeof(file), "%s.json", name);
    join(art, PATH_MAX, sc->dir, file);
    snprintf(file, sizeof(file), "%s.log", name);
    join(log, sizeof(log), sc->dir, file);
    const char *args[48] = {"run", "--runs", "1", "--steps", steps, "--warmup", "0", "--out", art,
                            "--log", log, "--"};
    size_t n = 12;
    for (size_t i = 0; cmd[i] != NULL && n < 47; i++)
        args[n++] = cmd[i];
    args[n] = NULL;
    run_tool(args, NULL, r);
}

/* ---- escaped processes, and shards that never come ------------------------------------------- */

static off_t file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? st.st_size : -1;
}

static void test_faults__escaped_processes_are_ended_and_counted(void **state)
{
    (void)state;
    NEED_COLLECTOR();
    struct scene sc;
    char art[PATH_MAX], log[PATH_MAX], pidfile[PATH_MAX];
    scene_open(&sc, false);
    join(pidfile, sizeof(pidfile), sc.dir, "daemons.pid");
    join(log, sizeof(log), sc.dir, "daemon.log");
    struct result r;
    const char *cmd[] = {HELPER, "daemon", pidfile, "--", CANARY, "--steps", "3", "--step-ms",
                         "1", NULL};
    run_once(&sc, "daemon", "3", cmd, art, &r);
    long pids[2] = {0, 0};
    FILE *f = fopen(pidfile, "r");
    assert_non_null(f);
    int got = fscanf(f, "%ld %ld", &pids[0], &pids[1]);
    fclose(f);
    bool alive[2] = {pid_alive(pids[0]), pid_alive(pids[1])};
    off_t before = file_size(log);
    sleep_ms(200);
    off_t after = file_size(log);
    for (int i = 0; i < 2; i++)
        if (pids[i] > 0)
            kill((pid_t)pids[i], SIGKILL); /* never leave them running, whatever happened */
    assert_int_equal(got, 2);
    expect_exit(&r, 0);
    if (alive[0] || alive[1])
        fail_msg("escaped processes still run after the tool ended (%d, %d):\n%s", alive[0],
                 alive[1], r.err);
    assert_true(before > 0);
    assert_int_equal(before, after); /* nothing writes to the log any more */
    expect_in_err(&r, "canary-gate: warning: run 1 of 1: 2 canary processes had left its process "
                      "group (setsid, a daemon) and still ran when the canary ended; the gate "
                      "ended them");
    remove_tree(sc.dir);
}

/* Issue 37, item 14: orphans of the canary (double-forked, so the gate is their subreaper) are
 * reaped as they come, not when the run ends: 130 every 20 ms (and the time a round takes) for the
 * run's 200 steps of 20 ms (long enough for 8 rounds under the sanitizers) left thousands of
 * zombies under the gate before. The canary's own status is still read (exit 0, its
 * steps measured). */
static void test_faults__orphans_are_reaped_during_the_run(void **state)
{
    (void)state;
    NEED_COLLECTOR();
    struct scene sc;
    char art[PATH_MAX], counts[PATH_MAX];
    scene_open(&sc, false);
    join(counts, sizeof(counts), sc.dir, "zombies.txt");
    struct result r;
    /* 8 s of canary: the maker's 8 rounds took more than 4 s once on a loaded machine */
    const char *cmd[] = {HELPER, "orphans", "130", "20", counts, "--", CANARY, "--steps", "400",
                         "--step-ms", "20", NULL};
    run_once(&sc, "orphans", "400", cmd, art, &r);
    expect_exit(&r, 0);
    long made = 0, most = 0;
    FILE *f = fopen(counts, "r");
    assert_non_null(f);
    int got = fscanf(f, "made %ld most %ld", &made, &most);
    fclose(f);
    assert_int_equal(got, 2);
    if (made < 1040) /* 8 rounds at least: what would have piled up */
        fail_msg("the zombie maker made only %ld orphans", made);
    if (most > 2 * 130)
        fail_msg("%ld zombies under the gate at once (of %ld orphans made)", most, made);
    remove_tree(sc.dir);
}

/* The canary ran without the injection library (a wrapper cleared the environment): no shard at
 * all is told apart from a canary that marked no step, with how to pass the environment on. */
static void test_faults__library_not_loaded_is_named_with_how_to_pass_the_environment(void **state)
{
    (void)state;
    NEED_COLLECTOR();
    struct scene sc;
    char art[PATH_MAX];
    scene_open(&sc, false);
    struct result r;
    const char *cmd[] = {"/usr/bin/env", "-u", "NVTX_INJECTION64_PATH", "-u",
                         "CUDA_INJECTION64_PATH", CANARY, "--steps", "3", "--step-ms", "1",
                         NULL};
    run_once(&sc, "noload", "3", cmd, art, &r);
    expect_exit(&r, 3);
    expect_in_err(&r, "the injection library was not loaded in the canary in run 1 of 1 (no "
                      "process wrote a shard)");
    expect_in_err(&r, "docker run -e");
    expect_in_err(&r, "sudo -E");
    expect_in_err(&r, "env -i");
    assert_null(strstr(r.err, "marked no step"));
    remove_tree(sc.dir);
}

/* The injection library could not write its shard: the message names the path and the errno
 * (from the library's failure record), not "marked no step" or "fewer steps". */
static void test_faults__shard_write_failure_names_the_path_and_errno(void **state)
{
    (void)state;
    NEED_COLLECTOR();
    struct scene sc;
    char art[PATH_MAX];
    scene_open(&sc, false);
    struct result r;
    const char *gone[] = {HELPER, "shard-dir-file", "--", CANARY, "--steps", "3", "--step-ms",
                          "1", NULL};
    run_once(&sc, "gone", "3", gone, art, &r);
    expect_exit(&r, 3);
    expect_in_err(&r, "the injection library could not open its shard in run 1 of 1: '");
    expect_in_err(&r, "/run-1/shard-");
    expect_in_err(&r, ".part': Not a directory (canary process ");
    expect_in_err(&r, "removed or replaced while the canary ran");
    assert_null(strstr(r.err, "free space"));
    assert_null(strstr(r.err, "marked no step"));
    /* the shard stops growing mid-run (a file size limit: EFBIG, as ENOSPC on a full disk) */
    const char *full[] = {HELPER, "fsize", "400", "--", CANARY, "--steps", "40", "--step-ms",
                          "1", NULL};
    run_once(&sc, "full", "40", full, art, &r);
    expect_exit(&r, 3);
    expect_in_err(&r, "the injection library could not write its shard in run 1 of 1: '");
    expect_in_err(&r, ".part': File too large (canary process ");
    expect_in_err(&r, "a file size limit (ulimit -f");
    assert_null(strstr(r.err, "fewer than"));
    remove_tree(sc.dir);
}

/* ---- a canary that floods its output ---------------------------------------------------------- */

static void test_faults__flooding_canary_keeps_memory_bounded(void **state)
{
    (void)state;
    NEED_COLLECTOR();
    struct scene sc;
    char art[PATH_MAX], log[PATH_MAX];
    scene_open(&sc, false);
    struct result r;
    /* 192 MiB on stdout and 64 MiB on stderr before the canary's steps */
    const char *cmd[] = {HELPER, "flood", "192", "64", "--", CANARY, "--steps", "3", "--step-ms",
                         "1", NULL};
    run_once(&sc, "flood", "3", cmd, art, &r);
    expect_exit(&r, 0);
    join(log, sizeof(log), sc.dir, "flood.log");
    struct stat st;
    assert_int_equal(stat(log, &st), 0);
    assert_true(st.st_size >= 256 * MIB); /* all of it reached the log */
    /* The tool's largest resident set (and its children's) stays far below what went through. */
    if (r.maxrss_kib * 1024L >= 96 * MIB)
        fail_msg("peak RSS %ld KiB while the canary wrote 256 MiB", r.maxrss_kib);
    print_message("peak RSS of canary-gate and the canary: %ld KiB for 256 MiB of output\n",
                  r.maxrss_kib);
    struct cg_artifact a;
    load(art, &a);
    assert_int_equal(a.n_runs, 1);
    assert_int_equal(a.runs[0].n_steps, 3);
    cg_artifact_release(&a);
    remove_tree(sc.dir);
}

/* ---- the tool interrupted mid-run ------------------------------------------------------------- */

/* Runs `run --runs 3` into a new scene's out/run.json (holding a previous file) with a canary
 * that leaves a stray in its group, interrupts the tool with sig once run at_run has started,
 * and checks: exit 3 saying "interrupted", every process of every canary group gone, no
 * temporary file or shard directory left, the previous out/run.json as it was, and the runs
 * completed (if any) in out/run.partial.json, which the tool names. ignore: the canary ignores
 * SIGINT/SIGTERM. */
static void interrupt_run(int sig, int at_run, bool ignore, struct scene *sc, char *art)
{
    char pids_path[PATH_MAX], log[PATH_MAX], hang_from[16];
    struct result r;
    scene_open(sc, false);
    join(art, PATH_MAX, sc->out, "run.json");
    write_file(art, "{\"previous\": \"artifact\"}\n");
    join(pids_path, sizeof(pids_path), sc->dir, "pids");
    join(log, sizeof(log), sc->dir, "run.log");
    snprintf(hang_from, sizeof(hang_from), "%d", at_run);
    struct spawn_opts o = {false, 0, sc->tmp, NULL};
    const char *args[40] = {"run", "--runs", "3", "--steps", "2", "--warmup", "0",
                            "--kill-grace", "1", "--out", art, "--log", log, "--",
                            HELPER, "group", pids_path, "--hang-from-run", hang_from};
    size_t n_args = 19;
    if (ignore)
        args[n_args++] = "--ignore";
    const char *canary[] = {"--", CANARY, "--steps", "2", "--step-ms", "1", NULL};
    for (size_t i = 0; canary[i] != NULL; i++)
        args[n_args++] = canary[i];
    args[n_args] = NULL;
    struct child c;
    spawn(CG_TOOL_PATH, args, &o, &c);
    wait_for_lines(pids_path, at_run);
    sleep_ms(200); /* the canary is running its steps, or hanging */
    assert_int_equal(kill(c.pid, sig), 0);
    reap(&c, &r);
    expect_exit(&r, 3);
    expect_in_err(&r, "interrupted");
    /* a canary that ignores the signal outlives the grace: said, with how many were killed */
    if (ignore)
        expect_in_err(&r, "still ran 1 s after the interrupt and were killed (SIGKILL)");
    else if (strstr(r.err, "still ran") != NULL)
        fail_msg("a canary that ended on the signal reported as killed:\n%s", r.err);

    long pids[8][2];
    size_t n = read_pids(pids_path, pids, 8);
    assert_int_equal(n, (size_t)at_run);
    /* SIGKILL is delivered asynchronously: a process killed as the tool exited may take a moment
     * to be gone on a loaded machine, so wait for it (up to a minute) before failing. */
    for (size_t i = 0; i < n; i++) {
        int tries = 0;
        while ((pid_alive(pids[i][0]) || pid_alive(pids[i][1]) || group_alive(pids[i][0])) &&
               tries++ < 6000)
            sleep_ms(10);
        if (tries > 6000)
            fail_msg("run %zu: canary %ld or its stray %ld is still running", i + 1, pids[i][0],
                     pids[i][1]);
    }
    const char *none[] = {NULL};
    expect_only(sc->tmp, none);
    const char *names[] = {"run.json", at_run > 1 ? "run.partial.json" : NULL, NULL};
    expect_only(sc->out, names);
    expect_file(art, "{\"previous\": \"artifact\"}\n");
    if (at_run > 1)
        expect_in_err(&r, "run.partial.json'; '");
}

static void test_faults__sigterm_mid_run_stops_the_group_and_keeps_whole_runs(void **state)
{
    (void)state;
    NEED_COLLECTOR();
    struct scene sc;
    char art[PATH_MAX];
    /* run 1 completes, run 2 hangs with a canary that ignores SIGINT and SIGTERM; the previous
     * artifact stays, the completed run goes beside it */
    interrupt_run(SIGTERM, 2, true, &sc, art);
    struct cg_artifact a;
    char partial[PATH_MAX];
    join(partial, sizeof(partial), sc.out, "run.partial.json");
    load(partial, &a); /* whole: it parses */
    assert_int_equal(a.n_runs, 1);
    assert_int_equal(a.settings.runs, 1);
    assert_int_equal(a.runs[0].n_steps, 2);
    cg_artifact_release(&a);
    remove_tree(sc.dir);
}

static void test_faults__sigint_in_the_first_run_writes_nothing(void **state)
{
    (void)state;
    NEED_COLLECTOR();
    struct scene sc;
    char art[PATH_MAX];
    interrupt_run(SIGINT, 1, false, &sc, art);
    expect_file(art, "{\"previous\": \"artifact\"}\n");
    remove_tree(sc.dir);
}

/* SIGHUP (a closed terminal or session), SIGUSR1 and SIGALRM end the tool as SIGTERM does:
 * the canary's group is stopped, whole runs go beside the artifact, the previous one stays (they
 * ended the tool on the spot before, leaving the canary running in its own group, rc 129). */
static void test_faults__hup_usr1_and_alrm_stop_the_run_as_term_does(void **state)
{
    (void)state;
    NEED_COLLECTOR();
    const int sigs[] = {SIGHUP, SIGUSR1, SIGALRM};
    for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
        struct scene sc;
        char art[PATH_MAX];
        interrupt_run(sigs[i], i == 0 ? 2 : 1, false, &sc, art);
        remove_tree(sc.dir);
    }
}

/* SIGKILL reaches no handler: the watchdog the tool starts beside each run ends the canary's
 * group when the tool is gone (it was left running under pid 1 before). */
static void test_faults__a_killed_gate_takes_its_canary_with_it(void **state)
{
    (void)state;
    NEED_COLLECTOR();
    struct scene sc;
    char art[PATH_MAX], pids_path[PATH_MAX], log[PATH_MAX];
    struct result r;
    scene_open(&sc, false);
    join(art, PATH_MAX, sc.out, "run.json");
    join(pids_path, sizeof(pids_path), sc.dir, "pids");
    join(log, sizeof(log), sc.dir, "run.log");
    struct spawn_opts o = {false, 0, sc.tmp, NULL};
    const char *args[] = {"run", "--runs", "2", "--steps", "2", "--warmup", "0", "--out", art,
                          "--log", log, "--", HELPER, "group", pids_path, "--hang-from-run",
                          "1", "--ignore", "--", CANARY, "--steps", "2", "--step-ms", "1", NULL};
    struct child c;
    spawn(CG_TOOL_PATH, args, &o, &c);
    wait_for_lines(pids_path, 1);
    sleep_ms(200);
    assert_int_equal(kill(c.pid, SIGKILL), 0);
    reap(&c, &r);
    long pids[2][2];
    assert_int_equal(read_pids(pids_path, pids, 2), 1);
    int tries = 0;
    while ((pid_alive(pids[0][0]) || pid_alive(pids[0][1]) || group_alive(pids[0][0])) &&
           tries++ < 1500)
        sleep_ms(10);
    if (pid_alive(pids[0][0]) || group_alive(pids[0][0]))
        fail_msg("the canary %ld (ignoring SIGTERM) outlived its killed gate", pids[0][0]);
    remove_tree(sc.dir);
}

/* The main command interrupted in its second run, as a CI cancel does (SIGTERM): --out keeps the
 * good artifact it held (a 5-run file here), the completed run goes beside it, and the tool
 * says where in one line. */
static void test_faults__interrupted_gate_keeps_the_previous_artifact(void **state)
{
    (void)state;
    NEED_COLLECTOR();
    struct scene sc;
    struct result r;
    struct child c;
    struct cg_artifact a;
    char art[PATH_MAX], pids_path[PATH_MAX], log[PATH_MAX], partial[PATH_MAX];
    scene_open(&sc, true);
    join(art, sizeof(art), sc.out, "pr.json");
    join(partial, sizeof(partial), sc.out, "pr.partial.json");
    join(pids_path, sizeof(pids_path), sc.dir, "pids");
    join(log, sizeof(log), sc.dir, "pr.log");
    save_fixture(art, 3, 10e6);
    char *before = slurp(art);
    assert_non_null(before);
    struct spawn_opts o = {false, 0, sc.tmp, NULL};
    const char *args[] = {"--baseline", sc.base, "--runs", "3", "--steps", "2", "--warmup", "0",
                          "--kill-grace", "1", "--out", art, "--log", log, "--", HELPER, "group",
                          pids_path, "--hang-from-run", "2", "--", CANARY, "--steps", "2",
                          "--step-ms", "1", NULL};
    spawn(CG_TOOL_PATH, args, &o, &c);
    wait_for_lines(pids_path, 2);
    sleep_ms(200);
    assert_int_equal(kill(c.pid, SIGTERM), 0);
    reap(&c, &r);
    expect_exit(&r, 3);
    expect_in_err(&r, "interrupted");
    expect_in_err(&r, "1 completed run written to '");
    expect_in_err(&r, "pr.partial.json'; '");
    expect_file(art, before);
    load(partial, &a);
    assert_int_equal(a.n_runs, 1);
    cg_artifact_release(&a);
    const char *names[] = {"pr.json", "pr.partial.json", NULL};
    expect_only(sc.out, names);
    free(before);
    remove_tree(sc.dir);
}

/* ---- a rank killed mid-run --------------------------------------------------------------------- */

static const char rank0_shard[] = "canary-gate-shard 1\npid 10\nrank 0\nlocal_rank 0\n"
                                  "s 0 1000 2000 10\ns 1 2000 3000 10\ns 2 3000 4000 10\n"
                                  "s 3 4000 5000 10\nend\n";
static const char rank1_cut[] = "canary-gate-shard 1\npid 11\nrank 1\nlocal_rank 1\n"
                                "s 0 1000 2500 10\ns 1 2500 3200 10\ns 2 3200 4800 10\n"
                                "s 3 4800 60"; /* killed in the middle of a line */

static void parse_shard(const char *text, struct cg_shard *s)
{
    struct cg_err err;
    cg_err_init(&err);
    if (cg_shard_parse(text, strlen(text), "t", s, &err) != 0)
        fail_msg("%s", err.msg);
}

static void test_faults__cut_shard_of_a_killed_rank_still_counts(void **state)
{
    (void)state;
    struct cg_shard sh[2];
    struct cg_shard_status st;
    struct cg_err err;
    parse_shard(rank0_shard, &sh[0]);
    parse_shard(rank1_cut, &sh[1]);
    assert_true(sh[0].complete);
    assert_false(sh[1].complete); /* reported: no "end" line */
    assert_int_equal(sh[1].n_steps, 3); /* the cut line is dropped, the complete ones kept */
    cg_shard_status(sh, 2, &st);
    assert_false(st.all_complete);
    assert_int_equal(st.n_with_steps, 2);
    assert_int_equal(st.steps_seen, 3);

    struct cg_artifact a;
    cg_artifact_init(&a);
    cg_err_init(&err);
    struct cg_run *run = cg_artifact_add_run(&a);
    assert_non_null(run);
    struct cg_shard_merge_opts o = {0, 3, -1};
    assert_int_equal(cg_shard_merge(sh, 2, &o, run, &err), 0);
    assert_int_equal(run->n_steps, 3);
    static const int64_t wall[] = {1500, 1000, 1600}; /* the slower rank of each step */
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(run->steps[i].wall_ns, wall[i]);
        assert_int_equal(run->steps[i].tokens, 20); /* both ranks' tokens */
    }
    cg_artifact_release(&a);
    cg_shard_release(&sh[0]);
    cg_shard_release(&sh[1]);
}

/* End to end: a launcher of two ranks, rank 1 aborting after 5 steps (its shard stays a .part);
 * 3 steps are asked for, so both ranks measured them all. */
static void test_faults__killed_rank_is_reported_and_other_ranks_count(void **state)
{
    (void)state;
    NEED_COLLECTOR();
    struct scene sc;
    char art[PATH_MAX];
    scene_open(&sc, false);
    struct result r;
    const char *cmd[] = {HELPER, "ranks", "2", "1", "5", "--", CANARY, "--steps", "8",
                         "--step-ms", "1", "--tokens", "10", NULL};
    run_once(&sc, "ranks", "3", cmd, art, &r);
    expect_exit(&r, 0);
    struct cg_artifact a;
    load(art, &a);
    assert_int_equal(a.runs[0].n_steps, 3);
    for (size_t i = 0; i < 3; i++)
        assert_int_equal(a.runs[0].steps[i].tokens, 20); /* the killed rank's steps count */
    cg_artifact_release(&a);
    expect_in_err(&r, "rank 1"); /* the process that did not finish is named */
    remove_tree(sc.dir);
}

/* ---- a clock step ------------------------------------------------------------------------------ */

/* A shard with a step of zero or negative duration is refused, naming the shard, the line and
 * why, so the run fails loudly instead of averaging a clock step into the step times. */
static void test_faults__zero_or_negative_step_is_rejected_not_averaged(void **state)
{
    (void)state;
    static const char *const cases[][2] = {
        {"canary-gate-shard 1\npid 12\ns 0 1000 2000 10\ns 1 2000 2000 10\nend\n", "line 4"},
        {"canary-gate-shard 1\npid 12\ns 0 1000 2000 10\ns 1 2000 3000 10\n"
         "s 2 5000 3000 10\nend\n", "line 5"},
    };
    for (size_t i = 0; i < 2; i++) {
        struct cg_shard sh;
        struct cg_err err;
        cg_err_init(&err);
        int rc = cg_shard_parse(cases[i][0], strlen(cases[i][0]), "clock.shard", &sh, &err);
        assert_int_equal(rc, CG_EINPUT);
        assert_non_null(strstr(err.msg, "'clock.shard' line"));
        assert_non_null(strstr(err.msg, cases[i][1]));
        assert_non_null(strstr(err.msg, "zero or negative duration"));
        assert_int_equal(sh.n_steps, 0);
    }
}

/* End to end: a process of the canary wrote a step of zero duration; the run fails (exit 3)
 * naming the shard's line, and no artifact holding a 0 ns step is written. */
static void test_faults__clock_step_fails_the_run(void **state)
{
    (void)state;
    NEED_COLLECTOR();
    struct scene sc;
    char art[PATH_MAX], fake[PATH_MAX];
    scene_open(&sc, false);
    join(fake, sizeof(fake), sc.dir, "fake.shard");
    write_file(fake, "canary-gate-shard 1\npid 1\nrank 9\ns 0 1000 2000 1\ns 1 2000 2000 1\n"
                     "s 2 2000 3000 1\nend\n");
    struct result r;
    const char *cmd[] = {HELPER, "shard", fake, "--", CANARY, "--steps", "3", "--step-ms", "1",
                         NULL};
    run_once(&sc, "clock", "2", cmd, art, &r);
    expect_exit(&r, 3);
    expect_in_err(&r, "line 5: a step of zero or negative duration");
    assert_int_equal(access(art, F_OK), -1);
    remove_tree(sc.dir);
}

/* ---- a canary that ignores SIGTERM once measured ---------------------------------------------- */

/* The canary is done (its shard says so) but ignores the SIGTERM that stops it: SIGKILL ends it
 * after --kill-grace, and the run still counts, complete. */
static void test_faults__measured_canary_ignoring_sigterm_is_killed_after_the_grace(void **state)
{
    (void)state;
    NEED_COLLECTOR();
    struct scene sc;
    char art[PATH_MAX], log[PATH_MAX];
    scene_open(&sc, false);
    join(art, sizeof(art), sc.dir, "term.json");
    join(log, sizeof(log), sc.dir, "term.log");
    struct spawn_opts o = {false, 0, sc.tmp, NULL};
    struct result r;
    /* a grace of 5 s: time enough for a canary on a loaded machine to be scheduled and say it
     * got SIGTERM before the SIGKILL */
    const char *args[] = {"run", "--runs", "1", "--steps", "3", "--warmup", "1", "--kill-grace",
                          "5", "--out", art, "--log", log, "--", HELPER, "measured",
                          "--ignore-term", NULL};
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    run_tool(args, &o, &r);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double wall = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    expect_exit(&r, 0);
    expect_in_err(&r, "stopped after 4 steps");
    if (wall < 5.0 || wall > 60.0)
        fail_msg("took %.1f s: the grace is 5 s and the canary would run for 120 s", wall);
    char *text = slurp(log);
    assert_non_null(text);
    if (strstr(text, "measured: rank 0 got SIGTERM") == NULL) /* asked first, then killed */
        fail_msg("the canary was not sent SIGTERM first:\n%s", text);
    free(text);
    struct cg_artifact a;
    load(art, &a);
    assert_int_equal(a.runs[0].n_steps, 3);
    assert_int_equal(a.runs[0].stopped_after_steps, 4);
    cg_artifact_release(&a);
    const char *none[] = {NULL};
    expect_only(sc.tmp, none); /* the shard directory is gone */
    remove_tree(sc.dir);
}

/* ---- GPU records outside every step ------------------------------------------------------------ */

/* A process whose CUPTI ran but whose every timed GPU record fell outside every step (clocks of
 * two domains): the run gives no GPU metrics, with that reason in the artifact, on the terminal
 * and in the report; the baseline's kernels are not listed as vanished. */
static void test_faults__gpu_records_outside_every_step_give_no_gpu_metrics(void **state)
{
    (void)state;
    NEED_COLLECTOR();
    struct scene sc;
    char art[PATH_MAX], fake[PATH_MAX], base[PATH_MAX], report[PATH_MAX], json[PATH_MAX];
    scene_open(&sc, false);
    join(fake, sizeof(fake), sc.dir, "fake.shard");
    join(base, sizeof(base), sc.dir, "gpu-base.json");
    join(report, sizeof(report), sc.dir, "report.md");
    join(json, sizeof(json), sc.dir, "verdict.json");
    write_file(fake, "canary-gate-shard 1\npid 1\nrank 9\ngpu ok\ndevice 0 Test GPU 80GB\n"
                     "cupti soname /usr/lib/x86_64-linux-gnu/libcupti.so.13\n"
                     "s 0 1000 2000 1\ns 1 2000 3000 1\ns 2 3000 4000 1\n"
                     "c 40 0 0 37 0 3 1200\nm 0 1048576\n"
                     "w CUPTI activity kind MEMCPY2 unavailable: \\x1b[31mnot supported\n"
                     "w CUPTI activity kind MEMCPY2 unavailable: \\x1b[31mnot supported\n"
                     "end\n");
    struct result r;
    const char *cmd[] = {HELPER, "shard", fake, "--", CANARY, "--steps", "3", "--step-ms", "1",
                         NULL};
    run_once(&sc, "outside", "3", cmd, art, &r);
    expect_exit(&r, 0); /* measured, without GPU metrics: not a failure */
    expect_in_err(&r, "GPU metrics unavailable: 37 GPU activity records fell outside every step");
    struct cg_artifact a;
    load(art, &a);
    assert_false(a.gpu_available);
    assert_string_equal(a.gpu_reason, "37 GPU activity records fell outside every step");
    assert_string_equal(a.env.cupti_status, a.gpu_reason);
    assert_string_equal(a.env.cupti_library, "soname /usr/lib/x86_64-linux-gnu/libcupti.so.13");
    assert_int_equal(a.runs[0].outside_step_records, 37);
    assert_int_equal(a.runs[0].inside_step_records, 0);
    assert_int_equal(a.runs[0].late_memory_records, 3);
    assert_int_equal(a.runs[0].cupti_overhead_ns, 1200);
    for (size_t i = 0; i < a.runs[0].n_ops; i++)
        assert_int_equal(a.runs[0].ops[i].kind, CG_OP_RANGE);
    assert_int_equal(a.runs[0].n_warnings, 1);
    assert_string_equal(a.runs[0].warnings[0],
                        "CUPTI activity kind MEMCPY2 unavailable: \x1b[31mnot supported");
    cg_artifact_release(&a);
    /* the library's warning on the terminal, escaped, once for all runs of a command */
    char log[PATH_MAX];
    join(log, sizeof(log), sc.dir, "two.log");
    const char *two[] = {"run", "--runs", "2", "--steps", "3", "--warmup", "0", "--out", art,
                         "--log", log, "--", HELPER, "shard", fake, "--", CANARY, "--steps", "3",
                         "--step-ms", "1", NULL};
    run_tool(two, NULL, &r);
    expect_exit(&r, 0);
    static const char said[] = "run 1 of 2: the injection library says: CUPTI activity kind "
                               "MEMCPY2 unavailable: ?[31mnot supported\n";
    const char *at = strstr(r.err, said);
    if (at == NULL || strstr(at + strlen(said), "the injection library says") != NULL)
        fail_msg("the warning is not said once, escaped:\n%s", r.err);

    /* against a baseline with GPU metrics and a kernel: the reason shows, the kernel is not
     * reported as vanished */
    struct cg_artifact b;
    struct cg_err err;
    struct cg_fixture f = {3, 3, 1e6, 0.01, 0.02, -1, 1 << 30, 100 * MIB, 1, 7};
    cg_artifact_init(&b);
    cg_err_init(&err);
    assert_int_equal(cg_fixture_make(&b, &f), 0);
    assert_int_equal(cg_fixture_add_op(&b, "gemm_kernel_of_the_baseline", NULL, CG_OP_KERNEL, 4,
                                       4e5), 0);
    if (cg_artifact_save(base, &b, &err) != 0)
        fail_msg("%s", err.msg);
    cg_artifact_release(&b);
    const char *compare[] = {"compare", base, art, "--report", report, "--json", json, NULL};
    run_tool(compare, NULL, &r);
    char *md = slurp(report), *verdict = slurp(json);
    assert_non_null(md);
    assert_non_null(verdict);
    if (strstr(md, "GPU metrics unavailable** on this run: 37 GPU activity records fell outside "
                   "every step") == NULL)
        fail_msg("the report does not give the reason:\n%s", md);
    assert_null(strstr(md, "gemm_kernel_of_the_baseline"));
    assert_null(strstr(verdict, "gemm_kernel_of_the_baseline"));
    free(md);
    free(verdict);
    remove_tree(sc.dir);
}

/* ---- a baseline from a newer canary-gate ------------------------------------------------------- */

static void test_faults__newer_schema_version_exits_2_naming_it(void **state)
{
    (void)state;
    struct scene sc;
    char merged[PATH_MAX];
    scene_open(&sc, true);
    const char *base = sc.base, *cur = sc.cur;
    join(merged, sizeof(merged), sc.out, "merged.json");
    char *text = slurp(base);
    assert_non_null(text);
    char *v = strstr(text, "\"schema_version\":");
    assert_non_null(v);
    char *num = v + strlen("\"schema_version\":");
    while (*num == ' ' || *num == '\t')
        num++;
    char rewritten[1 << 16];
    snprintf(rewritten, sizeof(rewritten), "%.*s987%s", (int)(num - text), text,
             num + strspn(num, "0123456789"));
    write_file(base, rewritten);
    free(text);

    struct result r;
    const char *compare[] = {"compare", base, cur, NULL};
    run_tool(compare, NULL, &r);
    expect_exit(&r, 2);
    expect_in_err(&r, "schema_version 987");
    const char *swapped[] = {"compare", cur, base, NULL};
    run_tool(swapped, NULL, &r);
    expect_exit(&r, 2);
    expect_in_err(&r, "schema_version 987");
    const char *merge[] = {"merge", "-o", merged, cur, base, NULL};
    run_tool(merge, NULL, &r);
    expect_exit(&r, 2);
    expect_in_err(&r, "schema_version 987");
    assert_int_equal(access(merged, F_OK), -1);
    remove_tree(sc.dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_faults__unwritable_directory_keeps_previous_outputs),
        cmocka_unit_test(test_faults__dev_full_fails_naming_the_path),
        cmocka_unit_test(test_faults__full_disk_keeps_previous_outputs),
        cmocka_unit_test(test_faults__standard_output_that_fails_is_said),
        cmocka_unit_test(test_faults__full_disk_run_keeps_previous_artifact),
        cmocka_unit_test(test_faults__the_canary_gets_sigxfsz_at_its_default),
        cmocka_unit_test(test_faults__flooding_canary_keeps_memory_bounded),
        cmocka_unit_test(test_faults__escaped_processes_are_ended_and_counted),
        cmocka_unit_test(test_faults__orphans_are_reaped_during_the_run),
        cmocka_unit_test(test_faults__library_not_loaded_is_named_with_how_to_pass_the_environment),
        cmocka_unit_test(test_faults__shard_write_failure_names_the_path_and_errno),
        cmocka_unit_test(test_faults__sigterm_mid_run_stops_the_group_and_keeps_whole_runs),
        cmocka_unit_test(test_faults__sigint_in_the_first_run_writes_nothing),
        cmocka_unit_test(test_faults__hup_usr1_and_alrm_stop_the_run_as_term_does),
        cmocka_unit_test(test_faults__a_killed_gate_takes_its_canary_with_it),
        cmocka_unit_test(test_faults__interrupted_gate_keeps_the_previous_artifact),
        cmocka_unit_test(test_faults__cut_shard_of_a_killed_rank_still_counts),
        cmocka_unit_test(test_faults__killed_rank_is_reported_and_other_ranks_count),
        cmocka_unit_test(test_faults__zero_or_negative_step_is_rejected_not_averaged),
        cmocka_unit_test(test_faults__clock_step_fails_the_run),
        cmocka_unit_test(test_faults__newer_schema_version_exits_2_naming_it),
        cmocka_unit_test(test_faults__measured_canary_ignoring_sigterm_is_killed_after_the_grace),
        cmocka_unit_test(test_faults__gpu_records_outside_every_step_give_no_gpu_metrics),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
