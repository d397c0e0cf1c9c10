/*
 * test_stale: the shard directories of gates that are no longer running (stale.h) are removed
 * by the next gate under the same root, whatever host name their owner ran under when it shares
 * the looker's PID namespace and boot; those of running gates, of reused pids' new processes and
 * those without an owner file are kept; those of another PID namespace or boot (a container, or
 * another machine sharing --shard-dir) and older owner records are removed only once old. With
 * the real tool too: a gate in another PID namespace keeps its directory while it runs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "stale.h"
#include "workdir.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CANARY CG_BINARY_DIR "/tests/canaries/nvtx-canary"

static char root[] = "/tmp/cg-stale-XXXXXX";

static void path_of(char *out, size_t cap, const char *name)
{
    snprintf(out, cap, "%s/%s", root, name);
}

/* Makes root/name with an owner file of text (NULL: none), a run folder with a shard and a
 * fail file, as a gate killed mid-run leaves them. */
static void make_dir(const char *name, const char *owner)
{
    char p[512];
    path_of(p, sizeof(p), name);
    assert_int_equal(mkdir(p, 0700), 0);
    char q[600];
    snprintf(q, sizeof(q), "%s/run-1", p);
    assert_int_equal(mkdir(q, 0700), 0);
    snprintf(q, sizeof(q), "%s/run-1/shard-r0-l0-p1.part", p);
    FILE *f = fopen(q, "w");
    assert_non_null(f);
    fputs("canary-gate-shard 1\n", f);
    fclose(f);
    snprintf(q, sizeof(q), "%s/run-1.fail", p);
    f = fopen(q, "w");
    assert_non_null(f);
    fclose(f);
    if (owner != NULL) {
        snprintf(q, sizeof(q), "%s/" CG_STALE_OWNER, p);
        f = fopen(q, "w");
        assert_non_null(f);
        fputs(owner, f);
        fclose(f);
    }
}

static int exists(const char *name)
{
    char p[512];
    path_of(p, sizeof(p), name);
    struct stat st;
    return lstat(p, &st) == 0;
}

/* A pid that no longer runs: a child's, reaped. */
static long dead_pid(void)
{
    pid_t c = fork();
    if (c == 0)
        _exit(0);
    assert_true(c > 0);
    assert_int_equal(waitpid(c, NULL, 0), c);
    return (long)c;
}

/* This process's PID namespace (the inode of /proc/self/ns/pid) and boot id. */
static unsigned long long my_pidns(void)
{
    struct stat st;
    assert_int_equal(stat("/proc/self/ns/pid", &st), 0);
    return (unsigned long long)st.st_ino;
}

static const char *my_boot(void)
{
    static char id[64];
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    assert_non_null(f);
    assert_non_null(fgets(id, sizeof(id), f));
    fclose(f);
    id[strcspn(id, "\n")] = '\0';
    return id;
}

/* Sets the modification time of root/name and of everything in it (two levels) to t. */
static void age_dir(const char *name, time_t t)
{
    char cmd[700];
    struct tm tm;
    gmtime_r(&t, &tm);
    char stamp[32];
    strftime(stamp, sizeof(stamp), "%Y%m%d%H%M.%S", &tm);
    snprintf(cmd, sizeof(cmd), "cd '%s/%s' && TZ=UTC touch -h -t %s * */* . 2>/dev/null", root,
             name, stamp);
    assert_int_equal(system(cmd), 0);
}

/* When this machine booted (btime of /proc/stat). */
static time_t boot_time(void)
{
    FILE *f = fopen("/proc/stat", "r");
    assert_non_null(f);
    char line[256];
    long long t = 0;
    while (fgets(line, sizeof(line), f) != NULL)
        if (sscanf(line, "btime %lld", &t) == 1)
            break;
    fclose(f);
    assert_true(t > 0);
    return (time_t)t;
}

static void test_stale__dead_gates_directories_are_removed_the_others_kept(void **state)
{
    (void)state;
    assert_non_null(mkdtemp(root));
    char host[256], text[600], me[512], first[512], ns[200];
    assert_int_equal(gethostname(host, sizeof(host)), 0);
    host[sizeof(host) - 1] = '\0';
    snprintf(ns, sizeof(ns), "pidns %llu\nboot %s\n", my_pidns(), my_boot());
    /* this process's own, as cg_stale_mark writes it: running */
    path_of(me, sizeof(me), "canary-gate.LIVE01");
    assert_int_equal(mkdir(me, 0700), 0);
    struct cg_err err;
    assert_int_equal(cg_stale_mark(me, &err), 0);
    snprintf(text, sizeof(text), "pid %ld\nstart 1\nhost %s\n%s", dead_pid(), host, ns);
    make_dir("canary-gate.DEAD01", text);
    /* this process's pid, but another start time: the pid was reused */
    snprintf(text, sizeof(text), "pid %ld\nstart 1\nhost %s\n%s", (long)getpid(), host, ns);
    make_dir("canary-gate.REUSE1", text);
    /* another host's of another boot, recent: not ours to look at */
    snprintf(text, sizeof(text), "pid %ld\nstart 1\nhost another-host\npidns 1\nboot b-1\n",
             dead_pid());
    make_dir("canary-gate.OTHER1", text);
    make_dir("canary-gate.NOOWNR", NULL);
    snprintf(text, sizeof(text), "pid %ld\nstart 1\nhost %s\n%s", dead_pid(), host, ns);
    make_dir("not-a-gate.DEAD02", text);
    make_dir("canary-gate.TOOLONG", text); /* not a name mkdtemp makes */
    size_t n = cg_stale_clean(root, first, sizeof(first));
    assert_int_equal(n, 2);
    assert_non_null(strstr(first, "/canary-gate."));
    assert_false(exists("canary-gate.DEAD01"));
    assert_false(exists("canary-gate.REUSE1"));
    assert_true(exists("canary-gate.LIVE01"));
    assert_true(exists("canary-gate.OTHER1"));
    assert_true(exists("canary-gate.NOOWNR"));
    assert_true(exists("not-a-gate.DEAD02"));
    assert_true(exists("canary-gate.TOOLONG"));
    /* nothing more to remove; a root that is not there removes nothing */
    assert_int_equal(cg_stale_clean(root, first, sizeof(first)), 0);
    assert_string_equal(first, "");
    assert_int_equal(cg_stale_clean("/nonexistent/cg-stale", NULL, 0), 0);
    /* a second mark in the same directory is refused (the owner file is made once) */
    assert_int_equal(cg_stale_mark(me, &err), CG_EIO);
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
    assert_int_equal(system(cmd), 0);
    snprintf(root, sizeof(root), "/tmp/cg-stale-XXXXXX");
}

/* A gate of another PID namespace on this host name (a container with the host's network, a
 * shared --shard-dir) names a pid this gate cannot look at: its directory is kept, whatever that
 * pid is here, until nothing in it has changed for CG_STALE_UNSEEN_AGE_S. So is one of another
 * boot, unless it last changed before this machine booted (its gate died with the machine), and
 * one whose owner record is older than the namespace field. */
static void test_stale__another_namespaces_or_boots_directory_is_kept_until_old(void **state)
{
    (void)state;
    assert_non_null(mkdtemp(root));
    char host[256], text[600], first[512];
    assert_int_equal(gethostname(host, sizeof(host)), 0);
    host[sizeof(host) - 1] = '\0';
    time_t now = time(NULL), old = now - CG_STALE_UNSEEN_AGE_S - 3600;
    long gone = dead_pid();
    /* another PID namespace: its pid 1 runs here (another process), its other pids are gone */
    snprintf(text, sizeof(text), "pid 1\nstart 5\nhost %s\npidns %llu\nboot %s\n", host,
             my_pidns() + 1, my_boot());
    make_dir("canary-gate.NSPID1", text);
    snprintf(text, sizeof(text), "pid %ld\nstart 5\nhost %s\npidns %llu\nboot %s\n", gone, host,
             my_pidns() + 1, my_boot());
    make_dir("canary-gate.NSLIVE", text);
    make_dir("canary-gate.NSOLD1", text);
    age_dir("canary-gate.NSOLD1", old);
    /* another boot: changed since this one began, and before it */
    snprintf(text, sizeof(text), "pid %ld\nstart 5\nhost %s\npidns %llu\nboot %s\n", gone, host,
             my_pidns(), "00000000-0000-0000-0000-000000000000");
    make_dir("canary-gate.BOOTNW", text);
    make_dir("canary-gate.BOOTOL", text);
    age_dir("canary-gate.BOOTOL", boot_time() - 60);
    /* an older gate's record, without namespace and boot: its pid may be another namespace's */
    snprintf(text, sizeof(text), "pid %ld\nstart 5\nhost %s\n", gone, host);
    make_dir("canary-gate.OLDREC", text);
    make_dir("canary-gate.OLDRE2", text);
    age_dir("canary-gate.OLDRE2", old);
    assert_int_equal(cg_stale_clean(root, first, sizeof(first)), 3);
    assert_true(exists("canary-gate.NSPID1"));
    assert_true(exists("canary-gate.NSLIVE"));
    assert_false(exists("canary-gate.NSOLD1"));
    assert_true(exists("canary-gate.BOOTNW"));
    assert_false(exists("canary-gate.BOOTOL"));
    assert_true(exists("canary-gate.OLDREC"));
    assert_false(exists("canary-gate.OLDRE2"));
    /* a recent shard inside an old directory keeps it: its gate is still writing */
    make_dir("canary-gate.NSOLD2", text);
    age_dir("canary-gate.NSOLD2", old);
    char shard[600];
    snprintf(shard, sizeof(shard), "touch '%s/canary-gate.NSOLD2/run-1/shard-r0-l0-p1.part'", root);
    assert_int_equal(system(shard), 0);
    assert_int_equal(cg_stale_clean(root, first, sizeof(first)), 0);
    assert_true(exists("canary-gate.NSOLD2"));
    /* cg_stale_mark records this process's namespace and boot */
    char me[512], owner[600];
    path_of(me, sizeof(me), "canary-gate.MARKED");
    assert_int_equal(mkdir(me, 0700), 0);
    struct cg_err err;
    assert_int_equal(cg_stale_mark(me, &err), 0);
    snprintf(owner, sizeof(owner), "%s/" CG_STALE_OWNER, me);
    FILE *f = fopen(owner, "r");
    assert_non_null(f);
    size_t got = fread(text, 1, sizeof(text) - 1, f);
    fclose(f);
    text[got] = '\0';
    char want[200];
    snprintf(want, sizeof(want), "\npidns %llu\nboot %s\n", my_pidns(), my_boot());
    if (strstr(text, want) == NULL)
        fail_msg("owner record:\n%s", text);
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
    assert_int_equal(system(cmd), 0);
    snprintf(root, sizeof(root), "/tmp/cg-stale-XXXXXX");
}

/* Another host name is no reason to keep a dead gate's directory: a container with its own UTS
 * name (Docker's default, a pod without hostNetwork) in the host's PID namespace and boot was
 * SIGKILLed, and its directory stayed for every later gate, 40 days old. Where the owner's PID
 * namespace and boot are the looker's, its pid is looked at whatever its host name; where they
 * are not, another host's directory goes once nothing in it changed for CG_STALE_UNSEEN_AGE_S,
 * like every owner that cannot be looked at (but not for predating this machine's boot: that
 * says nothing of another machine). */
static void test_stale__another_hosts_directory_is_looked_at_by_pid_or_age(void **state)
{
    (void)state;
    assert_non_null(mkdtemp(root));
    char text[600], first[512], ns[200];
    snprintf(ns, sizeof(ns), "pidns %llu\nboot %s\n", my_pidns(), my_boot());
    time_t now = time(NULL), old = now - CG_STALE_UNSEEN_AGE_S - 3600;
    /* the same namespace and boot under a container's host name: dead, and 40 days old */
    snprintf(text, sizeof(text), "pid %ld\nstart 1\nhost ctr-4f1a2b\n%s", dead_pid(), ns);
    make_dir("canary-gate.CTRDED", text);
    make_dir("canary-gate.CTROLD", text);
    age_dir("canary-gate.CTROLD", now - 40L * 24 * 3600);
    /* ... and running: this process, as cg_stale_mark records it, under another host name */
    char me[512], owner[600];
    path_of(me, sizeof(me), "canary-gate.CTRLIV");
    assert_int_equal(mkdir(me, 0700), 0);
    struct cg_err err;
    assert_int_equal(cg_stale_mark(me, &err), 0);
    snprintf(owner, sizeof(owner), "%s/" CG_STALE_OWNER, me);
    FILE *f = fopen(owner, "r");
    assert_non_null(f);
    size_t got = fread(text, 1, sizeof(text) - 1, f);
    fclose(f);
    text[got] = '\0';
    char *host = strstr(text, "\nhost "), *eol = host != NULL ? strchr(host + 1, '\n') : NULL;
    assert_non_null(eol);
    char live[700];
    snprintf(live, sizeof(live), "%.*s\nhost ctr-4f1a2b%s", (int)(host - text), text, eol);
    f = fopen(owner, "w");
    assert_non_null(f);
    fputs(live, f);
    fclose(f);
    /* another machine's (another boot): kept while recent, removed once old */
    snprintf(text, sizeof(text), "pid %ld\nstart 1\nhost node-b\npidns %llu\nboot %s\n", dead_pid(),
             my_pidns(), "00000000-0000-0000-0000-000000000000");
    make_dir("canary-gate.NODEBN", text);
    make_dir("canary-gate.NODEBO", text);
    age_dir("canary-gate.NODEBO", old);
    /* changed before this machine booted, but within the age: another machine's gate may run */
    bool recent_boot = boot_time() - 60 > now - CG_STALE_UNSEEN_AGE_S + 60;
    if (recent_boot) {
        make_dir("canary-gate.NODEBB", text);
        age_dir("canary-gate.NODEBB", boot_time() - 60);
    }
    assert_int_equal(cg_stale_clean(root, first, sizeof(first)), 3);
    assert_false(exists("canary-gate.CTRDED"));
    assert_false(exists("canary-gate.CTROLD"));
    assert_true(exists("canary-gate.CTRLIV"));
    assert_true(exists("canary-gate.NODEBN"));
    assert_false(exists("canary-gate.NODEBO"));
    if (recent_boot)
        assert_true(exists("canary-gate.NODEBB"));
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
    assert_int_equal(system(cmd), 0);
    snprintf(root, sizeof(root), "/tmp/cg-stale-XXXXXX");
}

/* Entries of dir (not . and ..), -1 when it cannot be opened. */
static int entries(const char *dir)
{
    DIR *d = opendir(dir);
    if (d == NULL)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            n++;
    closedir(d);
    return n;
}

/* With the real tool: a gate in its own PID namespace (unshare, as a container with the host's
 * network runs it; skipped where unshare cannot make one) measures on while another gate, in
 * this namespace, starts under the same --shard-dir. The second once removed the first's
 * directory as stale ("removed 1 shard directory of gates no longer running"), and the first
 * failed. */
static void test_stale__a_gate_in_another_pid_namespace_keeps_its_directory(void **state)
{
    const struct cg_workdir *w = *state;
    if (system("unshare -r -p -f --mount-proc true >/dev/null 2>&1") != 0)
        skip();
    char shared[300], out[300], errp[300];
    snprintf(shared, sizeof(shared), "%s", cg_workdir_in(w, "shared"));
    assert_int_equal(mkdir(shared, 0755), 0);
    snprintf(out, sizeof(out), "%s", cg_workdir_in(w, "a.json"));
    snprintf(errp, sizeof(errp), "%s", cg_workdir_in(w, "a.err"));
    pid_t a = fork();
    assert_true(a >= 0);
    if (a == 0) {
        int fd = open(errp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0)
            dup2(fd, 2);
        execlp("unshare", "unshare", "-r", "-p", "-f", "--mount-proc", CG_TOOL_PATH, "run", "--out",
               out, "--runs", "1", "--steps", "20", "--warmup", "1", "--shard-dir", shared, "--",
               CANARY, "--steps", "21", "--step-ms", "100", (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 100 && entries(shared) < 1; i++)
        usleep(50 * 1000);
    usleep(300 * 1000);
    assert_int_equal(entries(shared), 1);
    struct cg_proc p;
    const char *args[] = {"run",  "--out",    "b.json", "--runs",      "1",    "--steps",
                          "2",    "--warmup", "1",      "--shard-dir", shared, "--",
                          CANARY, "--steps",  "3",      "--step-ms",   "5",    NULL};
    assert_int_equal(cg_workdir_run(w, CG_TOOL_PATH, NULL, args, &p), 0);
    assert_null(strstr(p.err, "removed"));
    int st = 0;
    assert_int_equal(waitpid(a, &st, 0), a);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        fail_msg("the gate in its own namespace failed:\n%s", cg_workdir_read(w, "a.err"));
    assert_true(cg_workdir_exists(w, "a.json"));
    assert_int_equal(entries(shared), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stale__dead_gates_directories_are_removed_the_others_kept),
        cmocka_unit_test(test_stale__another_namespaces_or_boots_directory_is_kept_until_old),
        cmocka_unit_test(test_stale__another_hosts_directory_is_looked_at_by_pid_or_age),
        cmocka_unit_test_setup_teardown(
            test_stale__a_gate_in_another_pid_namespace_keeps_its_directory, cg_workdir_setup,
            cg_workdir_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
