/*
 * core: the injection library's per-process lifecycle and its shard writer.
 *
 * The first entry point to run (NVTX or CUDA) starts the library: it reads the launcher's
 * environment, creates this process's shard "<dir>/shard-r<RANK>-l<LOCAL_RANK>-p<pid>-h<HOST>.part"
 * ("-p<pid>-e<N>" for a later image of a process that exec'd: open_shard) and registers an atexit
 * handler and fork handlers. Lines are appended to the .part file as the
 * canary runs (so a canary that dies keeps what it measured). When the last step of the measured
 * window ends, "done N" follows the last totals (cg_inject_measured). The atexit handler writes
 * the last NVTX op totals and an "end" line, and renames the file to ".shard"; it never calls into
 * CUPTI: it was registered before libcupti was loaded, so it runs after libcupti's own exit-time
 * destructors, and the GPU side flushes from a handler of its own registered later (cupti.c). A
 * forked child that does not exec inherits a disabled library: it writes nothing, flushes
 * nothing (cg_inject_owner compares getpid() with the pid at start) and its atexit does nothing.
 *
 * A shard that cannot be written (the directory is gone or not one, the disk is full, a file size
 * limit) stops the writer at its first failure, and the failure is recorded for the launcher in
 * the file CANARY_GATE_FAIL_FILE names: "OP ERRNO PID PATH" and a NUL written in place at its
 * start (the launcher made and sized it, so this needs no space on a full disk). Nothing is
 * printed. When several processes fail, the last one's line is what the file holds.
 *
 * The shard's keys and words are spelled in shard_format.h; what they mean: src/measure/shard.h and
 * docs/collector.md. Thread-safety: one mutex
 * guards the line buffer and the file; appends happen only with it held (the fork handlers hold
 * it across fork, so a child never inherits it locked).
 */
#include "escape.h"
#include "inject.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <locale.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <unistd.h>

#define CG_LINE_BUF_BYTES 65536

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static _Atomic bool g_active;
static _Atomic bool g_forked_child;
static pid_t g_pid; /* the process that started the library */
static _Atomic bool g_measured;
static int g_fd = -1;
static struct cg_inject_config g_config;
static char g_part_path[PATH_MAX];
static char g_final_path[PATH_MAX];
static pthread_mutex_t g_wlock = PTHREAD_MUTEX_INITIALIZER;
static char g_line[CG_LINE_BUF_BYTES];
static size_t g_line_len;
static locale_t g_c_locale = (locale_t)0; /* numbers in shards never follow the canary's locale */
static _Atomic int64_t g_trace_events, g_trace_dropped;
static char g_fail_path[PATH_MAX]; /* CANARY_GATE_FAIL_FILE, "" when not given */
static char g_start_line[80];      /* this process's "pid_start" line; "" when unknown */
static char g_started_line[64];    /* its "started" line; "" when unknown */
static _Atomic bool g_failed;

/* Records the first failure to write the shard for the launcher (see the file header). Never
 * creates or extends the file. */
static void record_failure(const char *op, int e, const char *path)
{
    if (atomic_exchange(&g_failed, true) || g_fail_path[0] == '\0')
        return;
    char line[CG_FAIL_FILE_BYTES];
    int n = snprintf(line, sizeof(line), "%s %d %ld %s", op, e, (long)getpid(), path);
    if (n < 0)
        return;
    size_t len = (size_t)n < sizeof(line) ? (size_t)n + 1 : sizeof(line); /* with its NUL */
    line[len - 1] = '\0';
    int fd = open(g_fail_path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    ssize_t w = pwrite(fd, line, len, 0);
    (void)w;
    close(fd);
}

static void write_all(const char *p, size_t n)
{
    while (n > 0 && g_fd >= 0) {
        ssize_t w = write(g_fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            /* A full disk loses the shard, never the canary: stop writing (a gap would leave
             * lines that lie) and tell the launcher why. */
            record_failure(CG_SHARD_FAIL_WRITE, w < 0 ? errno : ENOSPC, g_part_path);
            close(g_fd);
            g_fd = -1;
            return;
        }
        p += w;
        n -= (size_t)w;
    }
}

static void flush_line_buf(void)
{
    write_all(g_line, g_line_len);
    g_line_len = 0;
}

void cg_inject_lock(void)
{
    pthread_mutex_lock(&g_wlock);
}

void cg_inject_unlock(void)
{
    if (g_active && !g_forked_child)
        flush_line_buf();
    g_line_len = 0;
    pthread_mutex_unlock(&g_wlock);
}

void cg_inject_append_bytes(const char *p, size_t n)
{
    if (!g_active || g_forked_child)
        return;
    if (g_line_len + n > sizeof(g_line))
        flush_line_buf();
    if (n > sizeof(g_line)) {
        write_all(p, n);
        return;
    }
    memcpy(g_line + g_line_len, p, n);
    g_line_len += n;
}

void cg_inject_append(const char *fmt, ...)
{
    char tmp[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    cg_inject_append_bytes(tmp, (size_t)n < sizeof(tmp) ? (size_t)n : sizeof(tmp) - 1);
}

void cg_inject_append_name(const char *name)
{
    char tmp[256];
    for (size_t from = 0; from != (size_t)-1;) {
        size_t k = cg_escape_name(name, &from, tmp, sizeof(tmp));
        cg_inject_append_bytes(tmp, k);
    }
}

bool cg_inject_trace_take(void)
{
    if (atomic_fetch_add_explicit(&g_trace_events, 1, memory_order_relaxed) <
        g_config.trace_max_events)
        return true;
    atomic_fetch_sub_explicit(&g_trace_events, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&g_trace_dropped, 1, memory_order_relaxed);
    return false;
}

void cg_inject_trace_dropped(int64_t n)
{
    atomic_fetch_add_explicit(&g_trace_dropped, n, memory_order_relaxed);
}

void cg_inject_append_trace_counts(void)
{
    if (g_config.trace_first < 0)
        return;
    cg_inject_append(CG_SHARD_KEY_TRACE_COUNTS " %lld %lld\n",
                     (long long)atomic_load(&g_trace_events),
                     (long long)atomic_load(&g_trace_dropped));
}

void cg_inject_append_real(double v)
{
    if (isnan(v)) {
        cg_inject_append_bytes(CG_SHARD_NAN, sizeof(CG_SHARD_NAN) - 1);
        return;
    }
    if (isinf(v)) {
        cg_inject_append_bytes(v > 0 ? CG_SHARD_INF : "-" CG_SHARD_INF,
                               v > 0 ? sizeof(CG_SHARD_INF) - 1 : sizeof("-" CG_SHARD_INF) - 1);
        return;
    }
    char tmp[40];
    locale_t old = g_c_locale != (locale_t)0 ? uselocale(g_c_locale) : (locale_t)0;
    int n = snprintf(tmp, sizeof(tmp), "%.9g", v);
    if (old != (locale_t)0)
        uselocale(old);
    if (n > 0 && (size_t)n < sizeof(tmp))
        cg_inject_append_bytes(tmp, (size_t)n);
}

static bool env_int(const char *name, int64_t min, int64_t max, int64_t *out)
{
    const char *s = getenv(name);
    if (s == NULL || *s == '\0')
        return false;
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < min || v > max)
        return false;
    *out = v;
    return true;
}

/* RANK-style variables are copied into file names: digits only. */
static const char *env_rank(const char *name)
{
    const char *s = getenv(name);
    if (s == NULL || *s == '\0' || strlen(s) > 9)
        return NULL;
    for (const char *p = s; *p; p++)
        if (*p < '0' || *p > '9')
            return NULL;
    return s;
}

/* CANARY_GATE_TRACE_STEPS "A:B" (measured steps, 0 <= A <= B): raw indices after the warm-up. */
static void trace_config(void)
{
    g_config.trace_first = g_config.trace_last = -1;
    g_config.trace_max_events = CG_TRACE_DEFAULT_MAX_EVENTS;
    env_int(CG_ENV_TRACE_MAX_EVENTS, 1, INT32_MAX, &g_config.trace_max_events);
    const char *s = getenv(CG_ENV_TRACE_STEPS);
    if (s == NULL || *s == '\0')
        return;
    char *colon = NULL, *end = NULL;
    errno = 0;
    long long a = strtoll(s, &colon, 10);
    if (errno != 0 || colon == s || *colon != ':' || a < 0)
        return;
    long long b = strtoll(colon + 1, &end, 10);
    /* the shard reader takes step indices below CG_MAX_STEP_INDEX only */
    if (errno != 0 || end == colon + 1 || *end != '\0' || b < a ||
        b >= CG_MAX_STEP_INDEX - g_config.warmup)
        return;
    g_config.trace_first = g_config.warmup + a;
    g_config.trace_last = g_config.warmup + b;
}

/* The last NVTX op totals and range counts, the warnings and the trace counts, then the line
 * last, in one locked append: the end of the measured window ("done N") and the exit ("end")
 * share it. */
static void write_totals(const char *last)
{
    cg_inject_lock();
    cg_nvtx_write_ops();
    cg_nvtx_write_counts(true);
    cg_nvtx_write_warnings();
    cg_inject_append_trace_counts();
    cg_inject_append_bytes(last, strlen(last));
    cg_inject_unlock();
}

static void at_exit(void)
{
    if (g_forked_child || !g_active || !cg_inject_owner())
        return;
    write_totals(CG_SHARD_KEY_END "\n");
    pthread_mutex_lock(&g_wlock);
    g_active = false;
    if (g_fd >= 0) {
        close(g_fd);
        g_fd = -1;
    }
    pthread_mutex_unlock(&g_wlock);
    if (g_failed)
        return; /* the .part stays: a cut shard, and the failure is recorded */
    if (rename(g_part_path, g_final_path) != 0)
        record_failure(CG_SHARD_FAIL_RENAME, errno, g_final_path);
}

void cg_inject_write_done(void)
{
    char last[32];
    snprintf(last, sizeof(last), CG_SHARD_KEY_DONE " %lld\n", (long long)g_config.measure_end);
    write_totals(last);
}

void cg_inject_measured(void)
{
    if (!cg_inject_active() || !cg_inject_owner() || g_config.measure_end == INT64_MAX ||
        atomic_exchange(&g_measured, true))
        return;
    if (!cg_gpu_measured())
        cg_inject_write_done();
}

/* The writer lock is held across fork, so neither side inherits it held by a thread that does
 * not exist in the child. */
static void at_fork_prepare(void)
{
    pthread_mutex_lock(&g_wlock);
}

static void at_fork_parent(void)
{
    pthread_mutex_unlock(&g_wlock);
}

static void at_fork_child(void)
{
    g_forked_child = true;
    g_active = false;
    pthread_mutex_unlock(&g_wlock);
}

/* The header lines saying where the process ran (shard_format.h): the host, then the launcher's
 * variables that are set. Called with the writer lock held. */
/* SLURM_STEP_ID (else SLURM_STEPID) when this process is a task of a job step srun started other
 * than the gate's own (CG_ENV_SLURM_STEP, "JOB.STEP"); NULL otherwise: a batch script's processes
 * have no step id, and a process the gate started in its own step (a shell of srun --pty, a task
 * of srun -n 2 running the gate) inherited the gate's SLURM_PROCID and SLURM_NTASKS. */
static const char *slurm_step(void)
{
    const char *step = env_rank("SLURM_STEP_ID");
    if (step == NULL)
        step = env_rank("SLURM_STEPID");
    const char *gate = getenv(CG_ENV_SLURM_STEP), *job = getenv("SLURM_JOB_ID");
    if (step == NULL || gate == NULL || job == NULL)
        return step;
    size_t n = strlen(job);
    bool own = strncmp(gate, job, n) == 0 && gate[n] == '.' && strcmp(gate + n + 1, step) == 0;
    return own ? NULL : step;
}

static void append_placement(const char *host)
{
    static const char *const numbers[][2] = {
        {CG_SHARD_KEY_WORLD_SIZE, "WORLD_SIZE"},     {CG_SHARD_KEY_GROUP_RANK, "GROUP_RANK"},
        {CG_SHARD_KEY_SLURM_PROCID, "SLURM_PROCID"}, {CG_SHARD_KEY_SLURM_NODEID, "SLURM_NODEID"},
        {CG_SHARD_KEY_SLURM_NTASKS, "SLURM_NTASKS"}};
    static const char *const names[][2] = {{CG_SHARD_KEY_SLURM_NODE, "SLURMD_NODENAME"},
                                           {CG_SHARD_KEY_SLURM_JOB, "SLURM_JOB_ID"}};
    if (host[0] != '\0') {
        cg_inject_append(CG_SHARD_KEY_HOST " ");
        cg_inject_append_name(host);
        cg_inject_append("\n");
    }
    for (size_t i = 0; i < sizeof(numbers) / sizeof(numbers[0]); i++) {
        const char *v = env_rank(numbers[i][1]);
        if (v != NULL)
            cg_inject_append("%s %s\n", numbers[i][0], v);
    }
    static const char *const mpi[][2] = {{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
                                         {"PMI_RANK", "PMI_SIZE"},
                                         {"MV2_COMM_WORLD_RANK", "MV2_COMM_WORLD_SIZE"}};
    for (size_t i = 0; i < sizeof(mpi) / sizeof(mpi[0]); i++) {
        const char *r = env_rank(mpi[i][0]), *w = env_rank(mpi[i][1]);
        if (r == NULL)
            continue;
        cg_inject_append(CG_SHARD_KEY_MPI_RANK " %s\n", r);
        if (w != NULL)
            cg_inject_append(CG_SHARD_KEY_MPI_SIZE " %s\n", w);
        break;
    }
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        const char *v = getenv(names[i][1]);
        if (v != NULL && v[0] != '\0') {
            cg_inject_append("%s ", names[i][0]);
            cg_inject_append_name(v);
            cg_inject_append("\n");
        }
    }
    const char *step = slurm_step();
    if (step != NULL)
        cg_inject_append(CG_SHARD_KEY_SLURM_STEP " %s\n", step);
}

/* The shard's two names for the process's image gen (0: the first image; see open_shard).
 * False when they do not fit. */
static bool shard_names(const char *dir, const char *r, const char *l, long pid, int gen,
                        const char *host)
{
    char g[16] = "";
    if (gen > 0)
        snprintf(g, sizeof(g), CG_SHARD_EXEC_MARK "%d", gen);
    int n = snprintf(g_part_path, sizeof(g_part_path),
                     "%s/" CG_SHARD_FILE_PREFIX "r%s-l%s-p%ld%s-h%s" CG_SHARD_SUFFIX_PART, dir, r,
                     l, pid, g, host);
    if (n < 0 || (size_t)n >= sizeof(g_part_path))
        return false;
    n = snprintf(g_final_path, sizeof(g_final_path),
                 "%s/" CG_SHARD_FILE_PREFIX "r%s-l%s-p%ld%s-h%s" CG_SHARD_SUFFIX_FINAL, dir, r, l,
                 pid, g, host);
    return n >= 0 && (size_t)n < sizeof(g_final_path);
}

/* Fills g_started_line with this process's "started NS PPID" line (shard_format.h): its start,
 * ticks clock ticks after boot (CLOCK_BOOTTIME's count, as /proc/self/stat gives it), carried to
 * the clock of the steps (cg_inject_now_ns) by the time elapsed since. Left "" when a clock cannot
 * be read. */
static void started_line(unsigned long long ticks)
{
    long hz = sysconf(_SC_CLK_TCK);
    struct timespec boot;
    unsigned long long h = (unsigned long long)hz;
    if (hz <= 0 || ticks / h > (unsigned long long)INT64_MAX / 2000000000u ||
        clock_gettime(CLOCK_BOOTTIME, &boot) != 0)
        return;
    int64_t now_ns = (int64_t)cg_inject_now_ns();
    int64_t boot_ns = (int64_t)boot.tv_sec * 1000000000 + boot.tv_nsec;
    int64_t start_boot_ns = (int64_t)(ticks / h * 1000000000u + ticks % h * 1000000000u / h);
    int k = snprintf(g_started_line, sizeof(g_started_line), CG_SHARD_KEY_STARTED " %lld %lld\n",
                     (long long)(now_ns - (boot_ns - start_boot_ns)), (long long)getppid());
    if (k < 0 || (size_t)k >= sizeof(g_started_line))
        g_started_line[0] = '\0';
}

/* Fills g_start_line with this process's "pid_start TICKS PIDNS" line (shard_format.h): its start
 * (/proc/self/stat field 22, clock ticks after boot: kept across exec, another for a process that
 * got the pid after this one ended) and its PID namespace (the inode of /proc/self/ns/pid, 0 when
 * it cannot be read). Left "" when the start cannot be read. */
static void read_start_line(void)
{
    char buf[1024];
    int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return;
    buf[n] = '\0';
    char *p = strrchr(buf, ')'); /* the end of field 2, the command, which may hold anything */
    if (p == NULL)
        return;
    p++;
    for (int field = 3; field < 22; field++) {
        p += strspn(p, " ");
        p += strcspn(p, " ");
    }
    p += strspn(p, " ");
    char *end = NULL;
    errno = 0;
    unsigned long long ticks = strtoull(p, &end, 10);
    if (errno != 0 || end == p || *p < '0' || *p > '9' || (*end != ' ' && *end != '\n'))
        return;
    struct stat st;
    unsigned long long ns = stat("/proc/self/ns/pid", &st) == 0 ? (unsigned long long)st.st_ino : 0;
    int k = snprintf(g_start_line, sizeof(g_start_line), CG_SHARD_KEY_PID_START " %llu %llu\n",
                     ticks, ns);
    if (k < 0 || (size_t)k >= sizeof(g_start_line)) {
        g_start_line[0] = '\0';
        return;
    }
    started_line(ticks);
}

/* True when the shard open as fd was written by an earlier image of this process: its header
 * (the first 512 bytes) holds this process's "pid_start" line. Never for a process whose start is
 * unknown. */
static bool earlier_image(int fd)
{
    char head[512];
    size_t want = strlen(g_start_line);
    if (want == 0)
        return false;
    ssize_t n = pread(fd, head, sizeof(head) - 1, 0);
    if (n <= 0)
        return false;
    head[n] = '\0';
    for (const char *p = head; p != NULL && *p != '\0';) {
        if (strncmp(p, g_start_line, want) == 0)
            return true;
        p = strchr(p, '\n');
        if (p != NULL)
            p++;
    }
    return false;
}

/* Finishes the shard an earlier image of this process left at part when it exec'd (no exit
 * handler ran in it): "end" after its last complete line, and the rename to final. A shard
 * whose last line was cut is renamed as it is. Best effort: what it wrote counts either way. A
 * shard of another process that had this pid (earlier_image false: the pid space wrapped within
 * the run, or another PID namespace shares the directory, or its header is not written yet) is
 * left as it is: its process, or the launcher, tells how it ended. */
static void finish_earlier_image(const char *part, const char *final)
{
    int fd = open(part, O_RDWR | O_APPEND | O_CLOEXEC);
    if (fd < 0)
        return;
    if (!earlier_image(fd)) {
        close(fd);
        return;
    }
    struct stat st;
    char last = '\0';
    if (fstat(fd, &st) == 0 && st.st_size > 0 && pread(fd, &last, 1, st.st_size - 1) == 1 &&
        last == '\n') {
        ssize_t w = write(fd, CG_SHARD_KEY_END "\n", sizeof(CG_SHARD_KEY_END));
        (void)w;
    }
    close(fd);
    rename(part, final);
}

/* Creates this image's shard and returns its descriptor (the names in g_part_path and
 * g_final_path), or -1 with the failure recorded. A process keeps its pid across exec, and an
 * image that exec'd ran no exit handler: its shard is still there under the pid's name. Such a
 * shard is finished (finish_earlier_image) and the new image takes the next free generation,
 * "-e1", "-e2", ... after the pid: each image has a shard of its own, however many images came
 * before it (each name tried is a file that exists, so the search ends). The same pid and host
 * in one run's directory is not always the same process (a pid reused after the pid space
 * wrapped, PID namespaces sharing the directory): a shard whose "pid_start" line is not this
 * process's is left alone, and its name skipped as a finished one is. */
static int open_shard(const char *dir, const char *r, const char *l, long pid, const char *host)
{
    int e = EEXIST;
    for (int gen = 0; gen < INT_MAX; gen++) {
        if (!shard_names(dir, r, l, pid, gen, host))
            return -1;
        struct stat st;
        if (stat(g_final_path, &st) == 0)
            continue; /* an earlier image's, finished */
        int fd = open(g_part_path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
        if (fd >= 0)
            return fd;
        if (errno != EEXIST) {
            e = errno;
            break;
        }
        finish_earlier_image(g_part_path, g_final_path);
    }
    record_failure(CG_SHARD_FAIL_OPEN, e, g_part_path);
    return -1;
}

static void start_once(void)
{
    const char *dir = getenv(CG_ENV_SHARD_DIR);
    if (dir == NULL || dir[0] != '/')
        return;
    const char *fail = getenv(CG_ENV_FAIL_FILE);
    if (fail != NULL && fail[0] == '/' && strlen(fail) < sizeof(g_fail_path))
        memcpy(g_fail_path, fail, strlen(fail) + 1);
    const char *step = getenv(CG_ENV_STEP_RANGE);
    if (step == NULL || *step == '\0')
        step = "step";
    int n = snprintf(g_config.step_range, sizeof(g_config.step_range), "%s", step);
    if (n < 0 || (size_t)n >= sizeof(g_config.step_range))
        return;
    const char *fallback = getenv(CG_ENV_STEP_FALLBACK);
    n = snprintf(g_config.step_fallback, sizeof(g_config.step_fallback), "%s",
                 fallback != NULL && strcmp(fallback, step) != 0 ? fallback : "");
    if (n < 0 || (size_t)n >= sizeof(g_config.step_fallback))
        g_config.step_fallback[0] = '\0';
    g_config.warmup = 0;
    env_int(CG_ENV_WARMUP, 0, INT32_MAX, &g_config.warmup);
    g_config.steps = -1;
    g_config.measure_end = INT64_MAX;
    if (env_int(CG_ENV_STEPS, 1, INT32_MAX, &g_config.steps))
        g_config.measure_end = g_config.warmup + g_config.steps;
    const char *cupti = getenv(CG_ENV_CUPTI);
    g_config.cupti = !(cupti != NULL && strcmp(cupti, "0") == 0);
    int64_t mb = 64;
    env_int(CG_ENV_BUFFER_MB, 8, 4096, &mb);
    g_config.buffer_cap_bytes = mb * 1024 * 1024;
    trace_config();
    g_config.toggle_block = 0;
    env_int(CG_ENV_OVERHEAD_TOGGLE, 1, CG_TOGGLE_MAX_BLOCK, &g_config.toggle_block);

    const char *rank = env_rank("RANK");
    const char *local = env_rank("LOCAL_RANK");
    /* an MPI launcher's local rank where no LOCAL_RANK is set: Open MPI's, MPICH's, MVAPICH's */
    static const char *const mpi_local[] = {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID",
                                            "MV2_COMM_WORLD_LOCAL_RANK"};
    for (size_t i = 0; local == NULL && i < sizeof(mpi_local) / sizeof(mpi_local[0]); i++)
        local = env_rank(mpi_local[i]);
    char host[256] = "";
    if (gethostname(host, sizeof(host) - 1) != 0 || strcspn(host, "/ \\") != strlen(host))
        host[0] = '\0';
    g_pid = getpid();
    long pid = (long)g_pid;
    read_start_line();
    const char *r = rank ? rank : CG_SHARD_RANK_UNSET;
    const char *l = local ? local : CG_SHARD_RANK_UNSET;
    g_fd = open_shard(dir, r, l, pid, host);
    if (g_fd < 0)
        return;
    g_c_locale = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
    g_active = true;
    cg_inject_lock();
    cg_inject_append(CG_SHARD_MAGIC "\n" CG_SHARD_KEY_PID " %ld\n", pid);
    cg_inject_append_bytes(g_start_line, strlen(g_start_line));
    cg_inject_append_bytes(g_started_line, strlen(g_started_line));
    if (rank)
        cg_inject_append(CG_SHARD_KEY_RANK " %s\n", rank);
    if (local)
        cg_inject_append(CG_SHARD_KEY_LOCAL_RANK " %s\n", local);
    append_placement(host);
    cg_inject_append(CG_SHARD_KEY_WARMUP " %lld\n" CG_SHARD_KEY_STEP_RANGE " ",
                     (long long)g_config.warmup);
    cg_inject_append_name(g_config.step_range);
    cg_inject_append("\n");
    if (g_config.trace_first >= 0)
        cg_inject_append(CG_SHARD_KEY_TRACE_WINDOW " %lld %lld\n", (long long)g_config.trace_first,
                         (long long)g_config.trace_last);
    if (g_config.toggle_block > 0)
        cg_inject_append(CG_SHARD_KEY_TOGGLE " %lld\n" CG_SHARD_KEY_WARNING
                         " overhead toggle: measured steps in blocks of %lld, on off off on: "
                         "range times and places cover the on blocks only\n",
                         (long long)g_config.toggle_block, (long long)g_config.toggle_block);
    cg_inject_unlock();
    pthread_atfork(at_fork_prepare, at_fork_parent, at_fork_child);
    cg_inject_atexit(at_exit);
}

void cg_inject_atexit(void (*fn)(void))
{
    pthread_mutex_lock(&g_wlock);
    atexit(fn);
    pthread_mutex_unlock(&g_wlock);
}

bool cg_inject_start(void)
{
    pthread_once(&g_once, start_once);
    return cg_inject_active();
}

bool cg_inject_active(void)
{
    return g_active && !g_forked_child;
}

bool cg_inject_owner(void)
{
    return !g_forked_child && g_pid != 0 && getpid() == g_pid;
}

const struct cg_inject_config *cg_inject_config(void)
{
    return &g_config;
}
