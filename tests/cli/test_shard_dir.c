/*
 * test_shard_dir: --shard-dir on the measuring commands, with the real tool and the NVTX test
 * canary: the library is told a fresh directory under DIR through CANARY_GATE_SHARD_DIR; DIR is
 * left empty after a measured run, a timeout, a crashed canary and Ctrl-C; a command naming a
 * multi-node launcher without it is refused with one line before anything runs (exit 2); DIR
 * that is not a directory is a usage error; a SIGKILLed gate's directory is removed by the next
 * gate under the same root. And the launcher words themselves
 * (cg_multinode_launcher).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "multinode.h"
#include "workdir.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CANARY CG_BINARY_DIR "/tests/canaries/nvtx-canary"

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

static const char *make_shared(const struct cg_workdir *w)
{
    const char *dir = cg_workdir_in(w, "shared");
    mkdir(dir, 0755);
    return dir;
}

static void test_shard_dir__shards_go_under_it_and_it_is_left_empty(void **state)
{
    const struct cg_workdir *w = *state;
    char shared[256], seen_path[300], script[600];
    snprintf(shared, sizeof(shared), "%s", make_shared(w));
    snprintf(seen_path, sizeof(seen_path), "%s", cg_workdir_in(w, "seen"));
    snprintf(script, sizeof(script),
             "printf '%%s' \"$CANARY_GATE_SHARD_DIR\" > '%s'; exec \"$0\" \"$@\"", seen_path);
    struct cg_proc p;
    const char *args[] = {"run", "--out", "r.json", "--runs", "2", "--steps", "3", "--warmup",
                          "1", "--shard-dir", shared, "--", "/bin/sh", "-c", script, CANARY,
                          "--steps", "4", "--step-ms", "5", NULL};
    assert_int_equal(cg_workdir_run(w, CG_TOOL_PATH, NULL, args, &p), 0);
    const char *seen = cg_workdir_read(w, "seen");
    /* a fresh directory under DIR, one run's own inside it */
    assert_int_equal(strncmp(seen, shared, strlen(shared)), 0);
    assert_non_null(strstr(seen + strlen(shared), "/canary-gate."));
    assert_non_null(strstr(seen + strlen(shared), "/run-2"));
    assert_int_equal(entries(shared), 0);
    assert_true(cg_workdir_exists(w, "r.json"));
}

/* The tool with args in the background, stderr into <dir>/err; its pid. */
static pid_t start_tool(const struct cg_workdir *w, const char *const *args)
{
    const char *argv[40] = {CG_TOOL_PATH};
    size_t n = 1;
    for (; args[n - 1] != NULL && n < 39; n++)
        argv[n] = args[n - 1];
    argv[n] = NULL;
    char errp[300];
    snprintf(errp, sizeof(errp), "%s", cg_workdir_in(w, "err"));
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (chdir(w->path) != 0)
            _exit(127);
        int fd = open(errp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0)
            dup2(fd, 2);
        execv(CG_TOOL_PATH, (char *const *)argv);
        _exit(127);
    }
    return pid;
}

static int wait_tool(pid_t pid)
{
    int st = 0;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Waits up to 20 s for a shard file somewhere two levels under dir. */
static bool wait_for_shard(const char *dir)
{
    for (int i = 0; i < 200; i++) {
        char cmd[600];
        snprintf(cmd, sizeof(cmd), "ls %s/*/*/shard-* >/dev/null 2>&1", dir);
        if (system(cmd) == 0)
            return true;
        struct timespec ts = {0, 100 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return false;
}

static void test_shard_dir__left_empty_after_timeout_crash_and_ctrl_c(void **state)
{
    const struct cg_workdir *w = *state;
    char shared[256];
    snprintf(shared, sizeof(shared), "%s", make_shared(w));
    /* a hung canary stopped by --timeout */
    const char *hang[] = {"run", "--out", "h.json", "--runs", "1", "--steps", "3", "--warmup",
                          "0", "--timeout", "2", "--kill-grace", "1", "--shard-dir", shared,
                          "--", CANARY, "--steps", "9", "--hang-at", "1", NULL};
    struct cg_proc p;
    assert_int_equal(cg_workdir_run(w, CG_TOOL_PATH, NULL, hang, &p), 3);
    assert_int_equal(entries(shared), 0);
    /* a crashing canary */
    const char *crash[] = {"run", "--out", "c.json", "--runs", "1", "--steps", "3", "--warmup",
                           "0", "--shard-dir", shared, "--", CANARY, "--steps", "9",
                           "--crash-at", "1", NULL};
    assert_int_equal(cg_workdir_run(w, CG_TOOL_PATH, NULL, crash, &p), 3);
    assert_int_equal(entries(shared), 0);
    /* Ctrl-C while the canary runs */
    const char *slow[] = {"run", "--out", "i.json", "--runs", "1", "--steps", "1000", "--warmup",
                          "0", "--shard-dir", shared, "--", CANARY, "--steps", "1000",
                          "--step-ms", "20", NULL};
    pid_t pid = start_tool(w, slow);
    assert_true(wait_for_shard(shared));
    kill(pid, SIGINT);
    assert_int_equal(wait_tool(pid), 3);
    assert_int_equal(entries(shared), 0);
}

static void test_shard_dir__multinode_launcher_without_it_is_refused(void **state)
{
    const struct cg_workdir *w = *state;
    static const char *const lines[][8] = {
        {"srun", "-N", "2", CANARY, NULL},
        {"/usr/bin/sbatch", "--wait", "job.sh", NULL},
        {"mpirun", "-np", "4", CANARY, NULL},
        {"torchrun", "--nnodes", "2", "train.py", NULL},
        {"python3", "-m", "torch.distributed.run", "--nnodes=1:4", "train.py", NULL},
    };
    for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
        const char *args[16] = {"run", "--out", "m.json", "--runs", "1", "--"};
        size_t n = 6;
        for (size_t k = 0; lines[i][k] != NULL; k++)
            args[n++] = lines[i][k];
        args[n] = NULL;
        struct cg_proc p;
        assert_int_equal(cg_workdir_run(w, CG_TOOL_PATH, NULL, args, &p), 2);
        assert_non_null(strstr(p.err, "cannot collect"));
        assert_non_null(strstr(p.err, "--shard-dir DIR"));
        assert_null(strchr(p.err, '\n') == NULL ? NULL : strchr(strchr(p.err, '\n') + 1, '\n'));
        assert_false(cg_workdir_exists(w, "m.log")); /* nothing ran, no log made */
    }
    /* the main command and aa refuse it the same way */
    const char *gate[] = {"--baseline", "none.json", "--record-if-missing", "--", "srun", "-N",
                          "2", CANARY, NULL};
    struct cg_proc p;
    assert_int_equal(cg_workdir_run(w, CG_TOOL_PATH, NULL, gate, &p), 2);
    assert_non_null(strstr(p.err, "--shard-dir DIR"));
    assert_false(cg_workdir_exists(w, "none.json"));
    const char *aa[] = {"aa", "--runs", "2", "--", "srun", CANARY, NULL};
    assert_int_equal(cg_workdir_run(w, CG_TOOL_PATH, NULL, aa, &p), 2);
    assert_non_null(strstr(p.err, "--shard-dir"));
    /* torchrun on one node needs none */
    const char *single[] = {"run", "--out", "t.json", "--runs", "1", "--steps", "2", "--warmup",
                            "0", "--", "/bin/sh", "-c", "exec \"$1\" --steps 3", "torchrun",
                            CANARY, NULL};
    assert_int_equal(cg_workdir_run(w, CG_TOOL_PATH, NULL, single, &p), 0);
}

static void test_shard_dir__not_a_directory_is_a_usage_error(void **state)
{
    const struct cg_workdir *w = *state;
    struct cg_proc p;
    const char *args[] = {"run", "--out", "n.json", "--shard-dir", "/nonexistent/cg", "--",
                          CANARY, NULL};
    assert_int_equal(cg_workdir_run(w, CG_TOOL_PATH, NULL, args, &p), 2);
    assert_non_null(strstr(p.err, "--shard-dir '/nonexistent/cg'"));
}

/* Ranks started by a real MPI launcher (Debian's Open MPI; skipped where no mpirun is installed)
 * take their rank and world from it (OMPI_COMM_WORLD_RANK and _SIZE): the artifact has both
 * ranks, and a rank that loaded no library (mpirun without -x on another node) fails the run
 * naming it, exit 3. Under mpirun no rank was known, and such a rank was dropped without a word
 * (its node's slowdown passed). */
static void test_shard_dir__ranks_of_a_real_mpirun_are_checked(void **state)
{
    const struct cg_workdir *w = *state;
    if (system("command -v mpirun >/dev/null 2>&1") != 0)
        skip();
    char shared[256];
    snprintf(shared, sizeof(shared), "%s", make_shared(w));
    const char *env[] = {"OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1", NULL};
    struct cg_proc p;
    const char *both[] = {"run",    "--out",           "m.json", "--runs",      "1",    "--steps",
                          "3",      "--warmup",        "1",      "--shard-dir", shared, "--",
                          "mpirun", "--oversubscribe", "-np",    "2",           CANARY, "--steps",
                          "4",      "--step-ms",       "5",      NULL};
    if (cg_workdir_run(w, CG_TOOL_PATH, env, both, &p) != 0)
        fail_msg("%s", p.err);
    const char *json = cg_workdir_read(w, "m.json");
    assert_non_null(strstr(json, "\"rank\":\t0,"));
    assert_non_null(strstr(json, "\"rank\":\t1,"));
    assert_non_null(strstr(json, "\"local_rank\":\t1,")); /* OMPI_COMM_WORLD_LOCAL_RANK */
    const char *one[] = {"run",
                         "--out",
                         "m2.json",
                         "--runs",
                         "1",
                         "--steps",
                         "3",
                         "--warmup",
                         "1",
                         "--shard-dir",
                         shared,
                         "--",
                         "mpirun",
                         "--oversubscribe",
                         "-np",
                         "2",
                         "/bin/sh",
                         "-c",
                         "if [ \"$OMPI_COMM_WORLD_RANK\" = 1 ]; then unset NVTX_INJECTION64_PATH"
                         " CUDA_INJECTION64_PATH; fi; exec \"$0\" \"$@\"",
                         CANARY,
                         "--steps",
                         "4",
                         "--step-ms",
                         "5",
                         NULL};
    assert_int_equal(cg_workdir_run(w, CG_TOOL_PATH, env, one, &p), 3);
    assert_non_null(strstr(p.err, "rank 1 of a world of 2 wrote nothing"));
    assert_false(cg_workdir_exists(w, "m2.json"));
}

static void test_multinode__launcher_words(void **state)
{
    (void)state;
    char buf[64];
    static const struct {
        const char *argv[8];
        const char *want; /* NULL: none */
    } cases[] = {
        {{"srun", "-N", "2", "python", NULL}, "srun"},
        {{"/opt/slurm/bin/srun", NULL}, "srun"},
        {{"bash", "-c", "sbatch", NULL}, "sbatch"},
        {{"mpiexec", "-n", "8", "a.out", NULL}, "mpiexec"},
        {{"torchrun", "--nproc-per-node", "8", "--nnodes", "2", "t.py", NULL},
         "torchrun --nnodes 2"},
        {{"torchrun", "--nnodes=1:3", "t.py", NULL}, "torchrun --nnodes 3"},
        {{"torchrun", "--nnodes", "1", "t.py", NULL}, NULL},
        {{"torchrun", "--nproc-per-node", "4", "t.py", NULL}, NULL},
        {{"python3", "train.py", "--srun-like", NULL}, NULL},
        {{"srunner", NULL}, NULL},
        /* Debian's and MPICH's own names of the MPI launchers; DeepSpeed's and Accelerate's
         * launchers across machines (each passed unrefused, and a rank on another node wrote
         * into its own /tmp) */
        {{"mpirun.openmpi", "-np", "2", "a.out", NULL}, "mpirun"},
        {{"/usr/bin/mpiexec.hydra", "-n", "2", NULL}, "mpiexec"},
        {{"torchrun", "--nnodes=2:", "t.py", NULL}, "torchrun --nnodes 2"},
        {{"deepspeed", "--num_nodes", "2", "t.py", NULL}, "deepspeed --num_nodes 2"},
        {{"deepspeed", "--num_nodes=2", "t.py", NULL}, "deepspeed --num_nodes 2"},
        {{"deepspeed", "--hostfile", "/nonexistent/hosts", "t.py", NULL}, "deepspeed --hostfile"},
        /* a word that only starts like a launcher is none (a config file's name) */
        {{"canary-train", "--help", "srun.yaml", NULL}, NULL},
        {{"python3", "t.py", "--config=configs/mpirun.yaml", NULL}, NULL},
        {{"mpirun.yaml", NULL}, NULL},
        {{"/usr/bin/mpiexec.mpich", "-n", "2", NULL}, "mpiexec"},
        {{"deepspeed", "--num_gpus", "8", "t.py", NULL}, NULL},
        {{"accelerate", "launch", "--num_machines", "2", "t.py", NULL},
         "accelerate launch --num_machines 2"},
        {{"accelerate", "launch", "--num_machines=1", "t.py", NULL}, NULL},
        {{"mpirunner", NULL}, NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        bool got = cg_multinode_launcher((char *const *)cases[i].argv, buf, sizeof(buf));
        assert_int_equal(got, cases[i].want != NULL);
        if (got)
            assert_string_equal(buf, cases[i].want);
    }
    /* deepspeed's hostfile read: this machine alone is one node; another host is not */
    char hosts[64];
    snprintf(hosts, sizeof(hosts), "/tmp/cg-hosts-%d", (int)getpid());
    FILE *f = fopen(hosts, "w");
    assert_non_null(f);
    fputs("# one machine\nlocalhost slots=8\n", f);
    fclose(f);
    const char *one[] = {"deepspeed", "--hostfile", hosts, "t.py", NULL};
    assert_false(cg_multinode_launcher((char *const *)one, buf, sizeof(buf)));
    f = fopen(hosts, "w");
    assert_non_null(f);
    fputs("localhost slots=8\nworker-1 slots=8\n", f);
    fclose(f);
    assert_true(cg_multinode_launcher((char *const *)one, buf, sizeof(buf)));
    assert_string_equal(buf, "deepspeed --hostfile");
    unlink(hosts);
    const char *sb[] = {"sbatch", "--wait", "j.sh", NULL};
    assert_true(cg_multinode_is_sbatch((char *const *)sb));
    assert_false(cg_multinode_is_sbatch((char *const *)cases[0].argv));
}

static void test_multinode__infrastructure_failures_are_named(void **state)
{
    (void)state;
    char why[256];
    static const struct {
        const char *log, *want; /* want NULL: none */
    } cases[] = {
        {"step 3\n[E ProcessGroupNCCL.cpp:828] [Rank 1] Watchdog caught collective operation "
         "timeout: WorkNCCL(SeqNum=5)\n",
         "an NCCL collective timed out ('[E ProcessGroupNCCL.cpp:828] [Rank 1] Watchdog caught"},
        {"torch.distributed.elastic.rendezvous.api.RendezvousConnectionError: The connection to "
         "the C10d store has failed\n",
         "the rendezvous could not be reached"},
        {"RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:598] Connection closed "
         "by peer [127.0.0.1]:1234\nConnection reset by peer\n",
         "Connection reset by peer"},
        {"srun: error: Node failure on n2\n", "Slurm reported a node failure ('srun: error: Node"},
        {"Traceback (most recent call last):\nZeroDivisionError: division by zero\n", NULL},
    };
    /* a run of ranks under Slurm: every pattern may apply (which need which:
     * tests/measure/test_collect_check.c) */
    static const struct cg_infra_scope scope = {true, true};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct cg_infra_failure f;
        bool got = cg_multinode_infra_failure(cases[i].log, strlen(cases[i].log), &scope, &f);
        assert_int_equal(got, cases[i].want != NULL);
        if (got) {
            snprintf(why, sizeof(why), "%s ('%s')", f.reason, f.line);
            assert_non_null(strstr(why, cases[i].want));
        }
    }
}

/* srun (a stand-in that says what Slurm's says when a node fails) ends with a node failure: a
 * canary failure that names it, never a regression. */
static void test_shard_dir__infrastructure_failure_is_a_canary_failure(void **state)
{
    const struct cg_workdir *w = *state;
    struct cg_proc p;
    char srun[300], shared[256];
    snprintf(shared, sizeof(shared), "%s", make_shared(w));
    snprintf(srun, sizeof(srun), "%s", cg_workdir_in(w, "srun"));
    FILE *f = fopen(srun, "w");
    assert_non_null(f);
    fputs("#!/bin/sh\necho 'srun: error: Node failure on n2' >&2\nexit 1\n", f);
    assert_int_equal(fclose(f), 0);
    assert_int_equal(chmod(srun, 0755), 0);
    const char *args[] = {"run",     "--out", "x.json",   "--runs",   "1",
                          "--steps", "2",     "--warmup", "0",        "--shard-dir",
                          shared,    "--",    srun,       "train.py", NULL};
    assert_int_equal(cg_workdir_run(w, CG_TOOL_PATH, NULL, args, &p), 3);
    assert_non_null(strstr(p.err, "infrastructure failure, not a regression: Slurm reported a "
                                  "node failure"));
}

/* A gate killed with SIGKILL cannot remove its shard directory; the next gate under the same
 * root removes it (its owner is gone) and says so, and leaves the root empty. */
static void test_shard_dir__a_killed_gates_directory_is_removed_by_the_next(void **state)
{
    const struct cg_workdir *w = *state;
    char shared[256];
    snprintf(shared, sizeof(shared), "%s", make_shared(w));
    pid_t gate = fork();
    if (gate == 0) {
        int null = open("/dev/null", O_WRONLY);
        dup2(null, 1);
        dup2(null, 2);
        execl(CG_TOOL_PATH, CG_TOOL_PATH, "run", "--out", cg_workdir_in(w, "k.json"), "--runs",
              "1", "--steps", "3", "--warmup", "1", "--shard-dir", shared, "--", CANARY,
              "--steps", "100000", "--step-ms", "50", (char *)NULL);
        _exit(127);
    }
    assert_true(gate > 0);
    for (int i = 0; i < 100 && entries(shared) < 1; i++)
        usleep(50 * 1000);
    usleep(300 * 1000); /* the run's own folder made, the canary started */
    kill(gate, SIGKILL);
    assert_int_equal(waitpid(gate, NULL, 0), gate);
    assert_int_equal(entries(shared), 1);
    struct cg_proc p;
    const char *args[] = {"run", "--out", "r.json", "--runs", "1", "--steps", "2", "--warmup",
                          "1", "--shard-dir", shared, "--", CANARY, "--steps", "3", "--step-ms",
                          "5", NULL};
    assert_int_equal(cg_workdir_run(w, CG_TOOL_PATH, NULL, args, &p), 0);
    if (strstr(p.err, "removed 1 shard directory of gates no longer running ('") == NULL)
        fail_msg("not said:\n%s", p.err);
    assert_int_equal(entries(shared), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_multinode__launcher_words),
        cmocka_unit_test(test_multinode__infrastructure_failures_are_named),
        cmocka_unit_test_setup_teardown(test_shard_dir__infrastructure_failure_is_a_canary_failure,
                                        cg_workdir_setup, cg_workdir_teardown),
        cmocka_unit_test_setup_teardown(test_shard_dir__shards_go_under_it_and_it_is_left_empty,
                                        cg_workdir_setup, cg_workdir_teardown),
        cmocka_unit_test_setup_teardown(test_shard_dir__left_empty_after_timeout_crash_and_ctrl_c,
                                        cg_workdir_setup, cg_workdir_teardown),
        cmocka_unit_test_setup_teardown(test_shard_dir__multinode_launcher_without_it_is_refused,
                                        cg_workdir_setup, cg_workdir_teardown),
        cmocka_unit_test_setup_teardown(test_shard_dir__ranks_of_a_real_mpirun_are_checked,
                                        cg_workdir_setup, cg_workdir_teardown),
        cmocka_unit_test_setup_teardown(test_shard_dir__not_a_directory_is_a_usage_error,
                                        cg_workdir_setup, cg_workdir_teardown),
        cmocka_unit_test_setup_teardown(
            test_shard_dir__a_killed_gates_directory_is_removed_by_the_next, cg_workdir_setup,
            cg_workdir_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
