/*
 * multinode: launchers that place ranks on other nodes, read from the canary's words, and the
 * cancelling of a batch job (see multinode.h). Single-threaded.
 */
#include "multinode.h"

#include "shard.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *base_name(const char *w)
{
    const char *s = strrchr(w, '/');
    return s != NULL ? s + 1 : w;
}

/* The node count of a --nnodes value "N" or "MIN:MAX" (its MAX, or MIN when MAX is empty), -1
 * when it is not one. */
static long nnodes_value(const char *v)
{
    const char *colon = strchr(v, ':');
    const char *n = colon != NULL && colon[1] != '\0' ? colon + 1 : v;
    char *end = NULL;
    if (*n < '0' || *n > '9')
        return -1;
    errno = 0;
    long k = strtol(n, &end, 10);
    return errno == 0 && (*end == '\0' || (end == colon && colon[1] == '\0')) ? k : -1;
}

/* The value of option opt ("--nnodes") in the words after a launcher's word, as "--opt V" or
 * "--opt=V": NULL when not given. */
static const char *option_value(char *const *argv, const char *opt)
{
    size_t len = strlen(opt);
    for (size_t i = 0; argv[i] != NULL; i++) {
        if (strncmp(argv[i], opt, len) == 0 && argv[i][len] == '=')
            return argv[i] + len + 1;
        if (strcmp(argv[i], opt) == 0)
            return argv[i + 1];
    }
    return NULL;
}

/* The node count the option opt gives in the words after a launcher's word, -1 when none. */
static long option_nodes(char *const *argv, const char *opt)
{
    const char *v = option_value(argv, opt);
    return v != NULL ? nnodes_value(v) : -1;
}

/* Whether the word w is a launcher of name: its last path part is name, or name and the suffix
 * of an MPI's own installed name (Debian's mpirun.openmpi, mpiexec.mpich, MPICH's and Intel's
 * mpiexec.hydra); "srun.yaml" is a file's name, no launcher. */
static bool is_launcher(const char *w, const char *name)
{
    static const char *const suffixes[] = {"openmpi", "mpich", "hydra", "lam"};
    const char *b = base_name(w);
    size_t len = strlen(name);
    if (strncmp(b, name, len) != 0)
        return false;
    if (b[len] == '\0')
        return true;
    for (size_t i = 0; b[len] == '.' && i < sizeof(suffixes) / sizeof(suffixes[0]); i++)
        if (strcmp(b + len + 1, suffixes[i]) == 0)
            return true;
    return false;
}

/* Whether a DeepSpeed hostfile names a host other than this one ("HOST slots=N" lines, '#'
 * comments): true when it cannot be read (it may), false when it names localhost, 127.0.0.1
 * or this host's name alone. */
static bool hostfile_elsewhere(const char *path)
{
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return true;
    char line[512], self[256] = "";
    if (gethostname(self, sizeof(self) - 1) != 0)
        self[0] = '\0';
    bool elsewhere = false;
    while (!elsewhere && fgets(line, sizeof(line), f) != NULL) {
        char *p = line + strspn(line, " \t");
        size_t n = strcspn(p, " \t\r\n#");
        if (n == 0)
            continue;
        p[n] = '\0';
        elsewhere =
            strcmp(p, "localhost") != 0 && strcmp(p, "127.0.0.1") != 0 && strcmp(p, self) != 0;
    }
    fclose(f);
    return elsewhere;
}

bool cg_multinode_launcher(char *const *argv, char *buf, size_t cap)
{
    static const char *const launchers[] = {"srun", "sbatch", "mpirun", "mpiexec"};
    for (size_t i = 0; argv != NULL && argv[i] != NULL; i++) {
        const char *b = base_name(argv[i]);
        for (size_t k = 0; k < sizeof(launchers) / sizeof(launchers[0]); k++)
            if (is_launcher(argv[i], launchers[k])) {
                snprintf(buf, cap, "%s", launchers[k]);
                return true;
            }
        long n;
        if ((strcmp(b, "torchrun") == 0 || strcmp(b, "torch.distributed.run") == 0) &&
            (n = option_nodes(argv + i + 1, "--nnodes")) > 1) {
            snprintf(buf, cap, "torchrun --nnodes %ld", n);
            return true;
        }
        if (strcmp(b, "deepspeed") == 0) {
            if ((n = option_nodes(argv + i + 1, "--num_nodes")) > 1) {
                snprintf(buf, cap, "deepspeed --num_nodes %ld", n);
                return true;
            }
            const char *hosts = option_value(argv + i + 1, "--hostfile");
            if (hosts != NULL && hostfile_elsewhere(hosts)) {
                snprintf(buf, cap, "deepspeed --hostfile");
                return true;
            }
        }
        if (strcmp(b, "accelerate") == 0 && argv[i + 1] != NULL &&
            strcmp(argv[i + 1], "launch") == 0 &&
            (n = option_nodes(argv + i + 2, "--num_machines")) > 1) {
            snprintf(buf, cap, "accelerate launch --num_machines %ld", n);
            return true;
        }
    }
    return false;
}

bool cg_multinode_is_sbatch(char *const *argv)
{
    for (size_t i = 0; argv != NULL && argv[i] != NULL; i++)
        if (strcmp(base_name(argv[i]), "sbatch") == 0)
            return true;
    return false;
}

/* Known infrastructure failures: a text a line holds, what it means, and whether Slurm says it
 * (certain, and only believed when Slurm ran the canary); the others name ranks or their
 * rendezvous, and are believed only in a run of ranks, as a guess. */
static const struct {
    const char *needle, *reason;
    bool slurm;
} infra[] = {
    {"Watchdog caught collective operation timeout", "an NCCL collective timed out", false},
    {"NCCL timeout", "an NCCL collective timed out", false},
    {"RendezvousConnectionError", "the rendezvous could not be reached", false},
    {"RendezvousTimeoutError", "the rendezvous timed out waiting for the other nodes", false},
    {"RendezvousClosedError", "the rendezvous was closed", false},
    {"Connection reset by peer", "a connection between ranks was reset (Connection reset by peer)",
     false},
    {"Connection refused", "a connection was refused (a rendezvous or a peer rank)", false},
    {"Node failure on", "Slurm reported a node failure", true},
    {"DUE TO NODE FAILURE", "Slurm reported a node failure", true},
    {"NODE_FAIL", "Slurm reported a node failure", true},
};
#define N_INFRA (sizeof(infra) / sizeof(infra[0]))

void cg_multinode_infra_scope(char *const *argv, const struct cg_shard *shards, size_t n,
                              struct cg_infra_scope *scope)
{
    static const char *const launchers[] = {"srun", "sbatch", "mpirun", "mpiexec"};
    static const char *const pythons[] = {"torchrun", "torch.distributed.run",
                                          "torch.distributed.launch", "deepspeed", "accelerate"};
    *scope = (struct cg_infra_scope){false, false};
    for (size_t i = 0; argv != NULL && argv[i] != NULL; i++) {
        for (size_t k = 0; k < sizeof(launchers) / sizeof(launchers[0]); k++)
            if (is_launcher(argv[i], launchers[k])) {
                scope->ranks = true;
                scope->slurm |= k < 2;
            }
        for (size_t k = 0; k < sizeof(pythons) / sizeof(pythons[0]); k++)
            scope->ranks |= strcmp(base_name(argv[i]), pythons[k]) == 0;
    }
    size_t with_steps = 0;
    for (size_t i = 0; i < n; i++) {
        scope->ranks |= shards[i].rank >= 0 || shards[i].world_size > 1;
        scope->slurm |= shards[i].slurm_job != NULL;
        with_steps += shards[i].n_steps > 0;
    }
    scope->ranks |= with_steps > 1;
}

static bool span_has(const char *p, size_t n, const char *needle)
{
    size_t k = strlen(needle);
    for (size_t i = 0; i + k <= n; i++)
        if (memcmp(p + i, needle, k) == 0)
            return true;
    return false;
}

/* The known pattern a line holds that the scope allows (the last of the table's that match is
 * as good as any: a line names one failure), or -1. */
static int infra_pattern(const char *p, size_t n, const struct cg_infra_scope *scope)
{
    for (size_t k = 0; k < N_INFRA; k++)
        if ((infra[k].slurm ? scope->slurm : scope->ranks) && span_has(p, n, infra[k].needle))
            return (int)k;
    return -1;
}

/* A launcher's prefix of a rank's line, skipped: torchrun's "[default0]:" before the line as
 * the rank wrote it, PyTorch's own "[rank1]: " (one space after the colon). A frame line keeps
 * its indent either way. */
static size_t prefix_len(const char *p, size_t n)
{
    if (n == 0 || p[0] != '[')
        return 0;
    for (size_t i = 1; i + 1 < n && i < 40; i++)
        if (p[i] == ']') {
            if (p[i + 1] != ':')
                return 0;
            return i + 2 < n && p[i + 2] == ' ' ? i + 3 : i + 2;
        }
    return 0;
}

/* A traceback frame line ('  File "PATH", line N, in F') in a file of the canary's own: not
 * frozen, not under the Python installation (site-packages, dist-packages, lib/pythonX.Y). */
static bool own_frame(const char *p, size_t n)
{
    size_t i = 0;
    while (i < n && (p[i] == ' ' || p[i] == '\t'))
        i++;
    if (i == 0 || n - i < 7 || memcmp(p + i, "File \"", 6) != 0)
        return false;
    const char *path = p + i + 6, *q = memchr(path, '"', n - i - 6);
    if (q == NULL || q == path || path[0] == '<')
        return false;
    size_t len = (size_t)(q - path);
    return !span_has(path, len, "/site-packages/") && !span_has(path, len, "/dist-packages/") &&
           !span_has(path, len, "/lib/python") && !span_has(path, len, "/lib64/python");
}

static void quote_line(struct cg_infra_failure *f, const char *p, size_t n)
{
    size_t k = n < sizeof(f->line) - 1 ? n : sizeof(f->line) - 1;
    for (size_t i = 0; i < k; i++)
        f->line[i] = (unsigned char)p[i] < 0x20 ? ' ' : p[i];
    f->line[k] = '\0';
}

bool cg_multinode_infra_failure(const char *text, size_t len, const struct cg_infra_scope *scope,
                                struct cg_infra_failure *f)
{
    const char *ev = NULL, *exc = NULL; /* the last evidence line, the last own exception line */
    size_t ev_len = 0, exc_len = 0;
    int ev_k = -1, slurm_k = -1;
    const char *slurm = NULL;
    size_t slurm_len = 0;
    bool in_frames = false, own = false;
    for (const char *p = text, *end = text + len; p < end;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl != NULL ? (size_t)(nl - p) : (size_t)(end - p);
        size_t skip = prefix_len(p, n);
        const char *line = p + skip;
        size_t ln = n - skip;
        p += n + (nl != NULL);
        if (ln >= 10 && memcmp(line, "Traceback ", 10) == 0) {
            in_frames = true;
            own = false;
            continue;
        }
        if (in_frames && ln > 0 && (line[0] == ' ' || line[0] == '\t')) {
            own |= own_frame(line, ln);
            continue;
        }
        if (in_frames && ln > 0) { /* the exception that ended the traceback */
            in_frames = false;
            if (own) {
                exc = line;
                exc_len = ln;
            }
        }
        int k = infra_pattern(line, ln, scope);
        if (k < 0)
            continue;
        ev = line;
        ev_len = ln;
        ev_k = k;
        if (infra[k].slurm) {
            slurm = line;
            slurm_len = ln;
            slurm_k = k;
        }
    }
    if (slurm != NULL) { /* the scheduler's own word */
        f->reason = infra[slurm_k].reason;
        f->certain = true;
        quote_line(f, slurm, slurm_len);
        return true;
    }
    if (exc != NULL) { /* the canary's own last error decides */
        ev_k = infra_pattern(exc, exc_len, scope);
        ev = exc;
        ev_len = exc_len;
    }
    if (ev == NULL || ev_k < 0)
        return false;
    f->reason = infra[ev_k].reason;
    f->certain = false;
    quote_line(f, ev, ev_len);
    return true;
}

/* Appends id to ids (space-separated) unless it is there or does not fit; true when appended. */
static bool add_id(char *ids, size_t cap, const char *id, size_t len)
{
    size_t have = strlen(ids);
    if (len == 0 || len > 32 || strspn(id, "0123456789_") < len)
        return false;
    for (const char *p = ids; *p != '\0';) {
        size_t w = strcspn(p, " ");
        if (w == len && memcmp(p, id, len) == 0)
            return false;
        p += w + (p[w] == ' ');
    }
    if (have + len + 2 > cap)
        return false;
    if (have > 0)
        ids[have++] = ' ';
    memcpy(ids + have, id, len);
    ids[have + len] = '\0';
    return true;
}

size_t cg_multinode_job_ids(const struct cg_shard *shards, size_t n, const char *log, char *ids,
                            size_t cap)
{
    size_t k = 0;
    ids[0] = '\0';
    for (size_t i = 0; i < n; i++)
        if (shards[i].slurm_job != NULL)
            k += add_id(ids, cap, shards[i].slurm_job, strlen(shards[i].slurm_job));
    if (k > 0 || log == NULL)
        return k;
    int fd = open(log, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    static char buf[65537];
    off_t end = lseek(fd, 0, SEEK_END);
    off_t from = end > 65536 ? end - 65536 : 0;
    ssize_t got = pread(fd, buf, 65536, from);
    close(fd);
    if (got <= 0)
        return 0;
    buf[got] = '\0';
    const char *key = "Submitted batch job ", *last = NULL;
    for (const char *p = buf; (p = strstr(p, key)) != NULL; p += strlen(key))
        last = p + strlen(key);
    return last != NULL ? add_id(ids, cap, last, strspn(last, "0123456789")) : 0;
}

int cg_multinode_scancel(const char *ids, double timeout_s, char *why, size_t cap)
{
    char copy[512];
    char *argv[34] = {"scancel"};
    size_t n = 1;
    snprintf(copy, sizeof(copy), "%s", ids);
    for (char *save = NULL, *t = strtok_r(copy, " ", &save); t != NULL && n < 33;
         t = strtok_r(NULL, " ", &save))
        argv[n++] = t;
    argv[n] = NULL;
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(why, cap, "cannot start scancel: %s", strerror(errno));
        return -1;
    }
    if (pid == 0) {
        int null = open("/dev/null", O_RDWR);
        if (null >= 0) {
            dup2(null, 0);
            dup2(null, 1);
        }
        execvp("scancel", argv);
        _exit(127);
    }
    int st = 0;
    struct timespec tick = {0, 50 * 1000 * 1000};
    for (long ticks = 0; waitpid(pid, &st, WNOHANG) == 0; ticks++) {
        if ((double)ticks * 0.05 >= timeout_s) {
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
            snprintf(why, cap, "scancel did not answer within %.0f s", timeout_s);
            return -1;
        }
        nanosleep(&tick, NULL);
    }
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
        return 0;
    snprintf(why, cap, "scancel %s", WIFEXITED(st) && WEXITSTATUS(st) == 127
                                         ? "is not installed here"
                                         : "failed (its message went to the tool's stderr)");
    return -1;
}
