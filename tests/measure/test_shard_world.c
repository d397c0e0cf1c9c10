/*
 * test_shard_world: the "where it ran" lines of a shard and the check that a run's shards hold
 * every rank of their world once (cg_shard_check_world), from shard text: torchrun's RANK and
 * WORLD_SIZE, Slurm's SLURM_PROCID and SLURM_NTASKS, missing ranks named with their node where
 * block placement tells it, a duplicated rank, disagreeing world sizes, and shards that take no
 * part (no rank, no steps).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "shard.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* A Slurm task's shard (a task of step 0, which srun started): rank r of world w on node index
 * node (named n<node+1>), two steps. */
static void slurm_shard(struct cg_shard *s, int r, int w, int node)
{
    char text[512];
    snprintf(text, sizeof(text),
             "canary-gate-shard 1\npid %d\nhost vm\nslurm_procid %d\nslurm_nodeid %d\n"
             "slurm_ntasks %d\nslurm_node n%d\nslurm_job 42\nslurm_step 0\nwarmup 0\n"
             "s 0 100 200 -1\ns 1 200 300 -1\n",
             1000 + r, r, node, w, node + 1);
    struct cg_err err;
    assert_int_equal(cg_shard_parse(text, strlen(text), "t", s, &err), 0);
}

static void test_shard_world__placement_lines_are_read(void **state)
{
    (void)state;
    const char *text = "canary-gate-shard 1\npid 7\nrank 5\nlocal_rank 1\nhost node-a\n"
                       "world_size 8\ngroup_rank 2\nslurm_procid 3\nslurm_nodeid 1\n"
                       "slurm_ntasks 4\nslurm_node n2\nslurm_job 1234\nslurm_step 7\n";
    struct cg_shard s;
    struct cg_err err;
    assert_int_equal(cg_shard_parse(text, strlen(text), "t", &s, &err), 0);
    assert_string_equal(s.host, "node-a");
    assert_int_equal(s.world_size, 8);
    assert_int_equal(s.group_rank, 2);
    assert_int_equal(s.slurm_procid, 3);
    assert_int_equal(s.slurm_nodeid, 1);
    assert_int_equal(s.slurm_ntasks, 4);
    assert_string_equal(s.slurm_node, "n2");
    assert_string_equal(s.slurm_job, "1234");
    assert_int_equal(s.slurm_step, 7);
    int64_t r, w;
    assert_true(cg_shard_rank(&s, &r, &w)); /* RANK wins over SLURM_PROCID */
    assert_int_equal(r, 5);
    assert_int_equal(w, 8);
    assert_string_equal(cg_shard_node(&s), "n2");
    cg_shard_release(&s);
    /* a rank of an MPI launcher (Open MPI's OMPI_COMM_WORLD_RANK, MPICH's PMI_RANK): without
     * RANK or SLURM_PROCID, its MPI rank and size are its rank and world */
    const char *mpi = "canary-gate-shard 1\npid 8\nhost node-b\nmpi_rank 3\nmpi_size 4\n";
    assert_int_equal(cg_shard_parse(mpi, strlen(mpi), "t", &s, &err), 0);
    assert_true(cg_shard_rank(&s, &r, &w));
    assert_int_equal(r, 3);
    assert_int_equal(w, 4);
    cg_shard_release(&s);
    /* mpirun inside a Slurm job: the job's SLURM_PROCID (0 in a batch script) is inherited by
     * every rank; the MPI launcher's own rank is the rank (all were "rank 0 reported twice") */
    const char *in_job = "canary-gate-shard 1\npid 9\nhost node-c\nslurm_procid 0\n"
                         "slurm_ntasks 1\nmpi_rank 3\nmpi_size 4\n";
    assert_int_equal(cg_shard_parse(in_job, strlen(in_job), "t", &s, &err), 0);
    assert_true(cg_shard_rank(&s, &r, &w));
    assert_int_equal(r, 3);
    assert_int_equal(w, 4);
    cg_shard_release(&s);
    /* fuzz_shard: a "host" line without a name made a rank's node "", and the merged artifact
     * did not load again ("node: expected a name") */
    const char *empty = "canary-gate-shard 1\npid 9\nrank 0\nhost\nslurm_node \n";
    assert_int_equal(cg_shard_parse(empty, strlen(empty), "t", &s, &err), 0);
    assert_string_equal(cg_shard_node(&s), "?");
    cg_shard_release(&s);
    const char *bad = "canary-gate-shard 1\nworld_size x\n";
    assert_int_equal(cg_shard_parse(bad, strlen(bad), "t", &s, &err), CG_EINPUT);
}

/* Slurm's SLURM_PROCID and SLURM_NTASKS are a rank and a world only for a task srun started (the
 * shard's "slurm_step" line): a single process run in a batch script of several tasks (sbatch -n
 * 2) inherits the batch step's SLURM_PROCID 0 and SLURM_NTASKS 2, and is no rank of a world of 2;
 * the run failed "rank 1 (node index 1) of a world of 2 wrote nothing". */
static void test_shard_world__slurm_variables_are_a_rank_only_for_an_srun_task(void **state)
{
    (void)state;
    const char *batch = "canary-gate-shard 1\npid 9\nhost vm\nslurm_procid 0\nslurm_nodeid 0\n"
                        "slurm_ntasks 2\nslurm_node n1\nslurm_job 42\nwarmup 0\n"
                        "s 0 100 200 -1\ns 1 200 300 -1\n";
    struct cg_shard s;
    struct cg_err err;
    cg_err_init(&err);
    assert_int_equal(cg_shard_parse(batch, strlen(batch), "t", &s, &err), 0);
    int64_t r = 5, w = 5;
    assert_false(cg_shard_rank(&s, &r, &w));
    assert_int_equal(cg_shard_check_world(&s, 1, "/x", false, &err), 0);
    cg_shard_release(&s);
    /* the same process as a task of step 3 (srun -n 2): rank 0 of a world of 2, rank 1 missing */
    char task[512];
    snprintf(task, sizeof(task), "%sslurm_step 3\n", batch);
    assert_int_equal(cg_shard_parse(task, strlen(task), "t", &s, &err), 0);
    assert_true(cg_shard_rank(&s, &r, &w));
    assert_int_equal(r, 0);
    assert_int_equal(w, 2);
    assert_int_equal(cg_shard_check_world(&s, 1, "/x", false, &err), CG_ECANARY);
    assert_non_null(strstr(err.msg, "rank 1"));
    cg_shard_release(&s);
}

/* A rank's world is WORLD_SIZE, else the MPI launcher's size, else SLURM_NTASKS of a task srun
 * started, wherever its rank came from: a wrapper that sets RANK=$SLURM_PROCID and no WORLD_SIZE
 * (srun -N 2 --ntasks-per-node 2) with rank 3 never started passed unchecked. */
static void test_shard_world__the_world_falls_back_to_mpi_size_then_slurm_ntasks(void **state)
{
    (void)state;
    struct cg_shard sh[3];
    struct cg_err err;
    cg_err_init(&err);
    for (int i = 0; i < 3; i++) {
        char text[512];
        snprintf(text, sizeof(text),
                 "canary-gate-shard 1\npid %d\nrank %d\nhost vm\nslurm_procid %d\n"
                 "slurm_nodeid %d\nslurm_ntasks 4\nslurm_node n%d\nslurm_step 0\nwarmup 0\n"
                 "s 0 100 200 -1\n",
                 100 + i, i, i, i / 2, i / 2 + 1);
        assert_int_equal(cg_shard_parse(text, strlen(text), "t", &sh[i], &err), 0);
    }
    int64_t r, w;
    assert_true(cg_shard_rank(&sh[2], &r, &w));
    assert_int_equal(r, 2);
    assert_int_equal(w, 4);
    assert_int_equal(cg_shard_check_world(sh, 3, "/x", false, &err), CG_ECANARY);
    assert_non_null(strstr(err.msg, "rank 3 (node n2) of a world of 4 wrote nothing"));
    /* the MPI launcher's size before SLURM_NTASKS */
    for (int i = 0; i < 3; i++)
        sh[i].mpi_size = 3;
    assert_true(cg_shard_rank(&sh[2], &r, &w));
    assert_int_equal(w, 3);
    assert_int_equal(cg_shard_check_world(sh, 3, "/x", false, &err), 0);
    /* a SLURM_NTASKS inherited from the gate's own step (no slurm_step) is no world */
    for (int i = 0; i < 3; i++) {
        sh[i].mpi_size = -1;
        sh[i].slurm_step = -1;
    }
    assert_true(cg_shard_rank(&sh[2], &r, &w));
    assert_int_equal(w, -1);
    assert_int_equal(cg_shard_check_world(sh, 3, "/x", false, &err), 0);
    /* a rank outside a world that came from SLURM_NTASKS says so (one task per node that starts
     * its own ranks and sets RANK without WORLD_SIZE) */
    for (int i = 0; i < 3; i++) {
        sh[i].slurm_step = 0;
        sh[i].slurm_ntasks = 2;
    }
    assert_int_equal(cg_shard_check_world(sh, 3, "/x", false, &err), CG_ECANARY);
    assert_non_null(strstr(err.msg, "rank 2 on n2 is outside a world of 2 ranks (its size "
                                    "from SLURM_NTASKS: RANK is set without WORLD_SIZE)"));
    for (int i = 0; i < 3; i++)
        cg_shard_release(&sh[i]);
}

/* Writes each of texts (n of them) as a shard file into a fresh directory, loads them as a run
 * does (cg_shard_load_dir) into *sh, and removes the files. */
static size_t load_shards(const char *const *texts, size_t n, struct cg_shard **sh)
{
    char dir[] = "/tmp/cg-world-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256];
    for (size_t i = 0; i < n; i++) {
        snprintf(path, sizeof(path), "%s/shard-rx-lx-p%zu-hvm.shard", dir, i);
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fputs(texts[i], f);
        fclose(f);
    }
    size_t got = 0;
    struct cg_err err;
    cg_err_init(&err);
    assert_int_equal(cg_shard_load_dir(dir, sh, &got, &err), 0);
    for (size_t i = 0; i < n; i++) {
        snprintf(path, sizeof(path), "%s/shard-rx-lx-p%zu-hvm.shard", dir, i);
        unlink(path);
    }
    rmdir(dir);
    return got;
}

/* A task of srun -n 1 that starts its own ranks (torch.multiprocessing.spawn, or a shell that
 * starts two processes): every process inherits the task's SLURM_PROCID 0, SLURM_NTASKS 1 and
 * step id. They are processes of that one task, not its rank twice: the run failed "rank 0
 * reported twice ...: two launches wrote into one run, or a rank was restarted". Slurm's task
 * is present (its world of 1 is complete), and none of them is Slurm's rank 0 in the run; two
 * processes that set RANK 0 and 1 in one task are not outside a world of SLURM_NTASKS 1. A
 * rank of two launches (the same task number in two steps) is still refused. */
static void test_shard_world__processes_of_one_srun_task_are_not_its_rank_twice(void **state)
{
    (void)state;
    const char *head = "canary-gate-shard 1\npid %d\nhost vm\n%sslurm_procid 0\n"
                       "slurm_nodeid 0\nslurm_ntasks %d\nslurm_node n1\nslurm_job 42\n"
                       "slurm_step %d\nwarmup 0\n%s";
    const char *steps = "s 0 100 200 -1\ns 1 200 300 -1\n";
    char text[4][512];
    const char *t[4] = {text[0], text[1], text[2], text[3]};
    /* the task's own process (the spawning parent: no step) and its two workers */
    snprintf(text[0], sizeof(text[0]), head, 10, "", 1, 0, "");
    snprintf(text[1], sizeof(text[1]), head, 11, "", 1, 0, steps);
    snprintf(text[2], sizeof(text[2]), head, 12, "", 1, 0, steps);
    struct cg_shard *sh = NULL;
    size_t n = load_shards(t, 3, &sh);
    assert_int_equal(n, 3);
    struct cg_err err;
    cg_err_init(&err);
    if (cg_shard_check_world(sh, n, "/x", false, &err) != 0)
        fail_msg("%s", err.msg);
    int64_t r, w;
    for (size_t i = 0; i < n; i++)
        assert_false(cg_shard_rank(&sh[i], &r, &w) && sh[i].n_steps > 0);
    struct cg_artifact a;
    cg_artifact_init(&a);
    struct cg_run *run = cg_artifact_add_run(&a);
    struct cg_shard_merge_opts o = {0, 2, -1};
    assert_int_equal(cg_shard_merge(sh, n, &o, run, &err), 0);
    assert_int_equal(run->n_ranks, 0); /* not rank 0 twice */
    cg_artifact_release(&a);
    cg_shard_free_all(sh, n);
    /* two tasks of srun -n 2, each starting two processes: both tasks present, a world of 2 */
    snprintf(text[0], sizeof(text[0]), head, 10, "", 2, 0, steps);
    snprintf(text[1], sizeof(text[1]), head, 11, "", 2, 0, steps);
    snprintf(text[2], sizeof(text[2]), head, 12, "", 2, 0, steps);
    memcpy(strstr(text[2], "slurm_procid 0"), "slurm_procid 1", 14);
    snprintf(text[3], sizeof(text[3]), "%s", text[2]);
    memcpy(strstr(text[3], "pid 12"), "pid 13", 6);
    n = load_shards(t, 4, &sh);
    if (cg_shard_check_world(sh, n, "/x", false, &err) != 0)
        fail_msg("%s", err.msg);
    cg_shard_free_all(sh, n);
    /* task 1 of the two never started: told as before */
    n = load_shards(t, 2, &sh);
    assert_int_equal(cg_shard_check_world(sh, n, "/x", false, &err), CG_ECANARY);
    assert_non_null(strstr(err.msg, "rank 1 of a world of 2 wrote nothing"));
    cg_shard_free_all(sh, n);
    /* srun -n 1 bash -c "RANK=0 C & RANK=1 C & wait": two ranks of their own, world unknown */
    snprintf(text[0], sizeof(text[0]), head, 11, "rank 0\n", 1, 0, steps);
    snprintf(text[1], sizeof(text[1]), head, 12, "rank 1\n", 1, 0, steps);
    n = load_shards(t, 2, &sh);
    if (cg_shard_check_world(sh, n, "/x", false, &err) != 0)
        fail_msg("%s", err.msg);
    cg_shard_free_all(sh, n);
    /* the same two processes with RANK 0 both (inherited from the task): said as what it is */
    snprintf(text[1], sizeof(text[1]), head, 12, "rank 0\n", 1, 0, steps);
    n = load_shards(t, 2, &sh);
    assert_int_equal(cg_shard_check_world(sh, n, "/x", false, &err), CG_ECANARY);
    assert_non_null(strstr(err.msg, "by two processes of one srun task (task 0 of step 0) that "
                                    "inherited its RANK"));
    cg_shard_free_all(sh, n);
    /* task 0 of two steps (two sruns of one task each): two launches, refused */
    snprintf(text[0], sizeof(text[0]), head, 11, "", 1, 0, steps);
    snprintf(text[1], sizeof(text[1]), head, 12, "", 1, 1, steps);
    n = load_shards(t, 2, &sh);
    assert_int_equal(cg_shard_check_world(sh, n, "/x", false, &err), CG_ECANARY);
    assert_non_null(strstr(err.msg, "rank 0 reported twice"));
    assert_non_null(strstr(err.msg, "two launches wrote into one run"));
    cg_shard_free_all(sh, n);
}

/* A process run twice one after the other (a job step of 'python t.py || python t.py', a retry
 * wrapper) where its runs would be merged as one's concurrent processes: two processes of one
 * srun task (row 140 made them the task's processes), or two processes without a rank on one
 * host. The second started after the first had made its last step (its "started" line, the
 * process's start on the steps' clock): a restart, refused naming the task and both pids, never
 * merged step by step as if the two had run together. Processes started together are still the
 * task's processes, however late one makes its first step (spawned workers each importing torch
 * first); a start within the record's error (two clock ticks) of the other's last step is judged
 * a restart (a retry starts right after the first attempt's exit). A process without the record
 * (an older library) is not judged. The images of one process that exec'd itself (one pid, one
 * "pid_start") are one process's; ranks of their own are told apart by the rank. */
static void test_shard_world__a_process_run_twice_one_after_the_other_is_a_restart(void **state)
{
    (void)state;
    const char *task = "canary-gate-shard 1\npid %d\n%shost %s\n%sslurm_procid 0\nslurm_nodeid 0\n"
                       "slurm_ntasks 1\nslurm_node n1\nslurm_job 42\nslurm_step 3\nwarmup 0\n"
                       "s 0 %lld %lld -1\ns 1 %lld %lld -1\n";
    const char *plain = "canary-gate-shard 1\npid %d\n%shost %s\n%swarmup 0\n"
                        "s 0 %lld %lld -1\ns 1 %lld %lld -1\n";
    enum { NONE = -1000 }; /* no "started" line */
    static const struct {
        const char *what;
        bool in_task; /* of srun task 0 of step 3, else no Slurm */
        int n;
        struct {
            int pid;
            const char *host, *rank;
            int from_ms;    /* two steps of 10 ms from here */
            int started_ms; /* the process's start (NONE: not recorded) */
            int ppid;       /* its parent's pid (0: not recorded, an older library) */
        } p[4];
        const char *refused; /* NULL: not a restart */
    } cases[] = {
        {"a task's process run again after the first ended",
         true,
         2,
         {{11, "vm", "", 100, 90, 0}, {12, "vm", "", 5000, 4990, 0}},
         "srun task 0 of step 3 of job 42: pid 12 on n1 started after pid 11 had made its last "
         "step, and began its steps 4.88 s after it: a process with steps that began after "
         "another had ended its steps is not one of the run's processes; either the canary ran "
         "again (a retry such as 'cmd || cmd': let it run once in its task), or a process before "
         "the trainer marks steps (a launcher, a calibration or warm-up run: mark steps only in "
         "the trainer, or name the trainer's step range with --step-range)"},
        {"the same, the second listed first",
         true,
         2,
         {{12, "vm", "", 5000, 4990, 0}, {11, "vm", "", 100, 90, 0}},
         "pid 12 on n1 started after pid 11 had made its last step, and began its steps 4.88 s "
         "after it"},
        {"two workers of one task whose steps overlap",
         true,
         2,
         {{11, "vm", "", 100, 90, 0}, {12, "vm", "", 105, 90, 0}},
         NULL},
        {"two spawned workers, then both again",
         true,
         4,
         {{11, "vm", "rank 0\n", 100, 90, 0},
          {12, "vm", "rank 1\n", 102, 90, 0},
          {21, "vm", "rank 0\n", 5000, 4990, 0},
          {22, "vm", "rank 1\n", 5002, 4990, 0}},
         "srun task 0 of step 3 of job 42: pid 21 on n1 started after pid 11 had made its last "
         "step, and began its steps 4.88 s after it"},
        {"two ranks of their own in one task (a launcher in srun -n 1), one after the other",
         true,
         2,
         {{11, "vm", "rank 0\nworld_size 2\n", 100, 90, 0},
          {12, "vm", "rank 1\nworld_size 2\n", 5000, 4990, 0}},
         NULL},
        {"a task's one RANK inherited, run twice",
         true,
         2,
         {{11, "vm", "rank 0\n", 100, 90, 0}, {12, "vm", "rank 0\n", 5000, 4990, 0}},
         "srun task 0 of step 3 of job 42: pid 12 on n1 started after pid 11"},
        {"a canary without a rank run twice on one host",
         false,
         2,
         {{11, "vm", "", 100, 90, 0}, {12, "vm", "", 5000, 4990, 0}},
         "pid 12 on vm started after pid 11 had made its last step, and began its steps 4.88 s "
         "after it: a process with steps that began after another had ended its steps is not "
         "one of the run's processes; either the canary ran again (a retry such as 'cmd || "
         "cmd': let it run once), or a process before the trainer marks steps"},
        {"a retry that started right after the first's last step (within a clock tick)",
         false,
         2,
         {{11, "vm", "", 100, 90, 0}, {12, "vm", "", 200, 115, 0}},
         "pid 12 on vm started after pid 11 had made its last step, and began its steps 80.00 ms "
         "after it"},
        {"two processes without a rank whose steps overlap",
         false,
         2,
         {{11, "vm", "", 100, 90, 0}, {12, "vm", "", 105, 90, 0}},
         NULL},
        {"two started together, the second's first step after the first's last (spawn: torch "
         "imported first)",
         false,
         2,
         {{11, "vm", "", 1000, 0, 0}, {12, "vm", "", 1100, 5, 0}},
         NULL},
        {"the same in an srun task, the later one with the lower pid",
         true,
         2,
         {{12, "vm", "", 1000, 0, 0}, {11, "vm", "", 1100, 0, 0}},
         NULL},
        {"the second started 25 ms before the first's last step",
         false,
         2,
         {{11, "vm", "", 100, 90, 0}, {12, "vm", "", 500, 95, 0}},
         NULL},
        {"one after the other, no start recorded (an older library): not judged",
         false,
         2,
         {{11, "vm", "", 100, NONE, 0}, {12, "vm", "", 5000, NONE, 0}},
         NULL},
        {"processes without a rank on two hosts (two clocks)",
         false,
         2,
         {{11, "vm", "", 100, 90, 0}, {12, "vm2", "", 5000, 4990, 0}},
         NULL},
        {"two ranks of their own, one after the other",
         false,
         2,
         {{11, "vm", "rank 0\n", 100, 90, 0}, {12, "vm", "rank 1\n", 5000, 4990, 0}},
         NULL},
        {"a process that exec'd itself after its steps: two images of one process",
         false,
         2,
         {{11, "vm", "pid_start 500 4026531836\n", 100, 90, 0},
          {11, "vm", "pid_start 500 4026531836\n", 5000, 90, 0}},
         NULL},
        {"the same in an srun task",
         true,
         2,
         {{11, "vm", "pid_start 500 4026531836\n", 100, 90, 0},
          {11, "vm", "pid_start 500 4026531836\n", 5000, 90, 0}},
         NULL},
        {"a shell that ran the canary, then its retry as itself ('cmd || cmd' as its last "
         "command): the retry has the shell's pid and earlier start",
         true,
         2,
         {{11, "vm", "", 100, 90, 10}, {10, "vm", "", 5000, 80, 1}},
         "srun task 0 of step 3 of job 42: pid 10 on n1, the parent of pid 11 (a shell that ran "
         "its last command as itself), began its steps 4.88 s after pid 11 had made its last: a "
         "process with steps that began after another had ended its steps"},
        {"the same without Slurm",
         false,
         2,
         {{11, "vm", "", 100, 90, 10}, {10, "vm", "", 5000, 80, 1}},
         "pid 10 on vm, the parent of pid 11"},
        {"a parent whose steps overlap its child's",
         false,
         2,
         {{11, "vm", "", 100, 90, 10}, {10, "vm", "", 105, 80, 1}},
         NULL},
        {"a pid used again by a later process (another start)",
         false,
         2,
         {{11, "vm", "pid_start 500 4026531836\n", 100, 90, 0},
          {11, "vm", "pid_start 900 4026531836\n", 5000, 4990, 0}},
         "pid 11 on vm started after pid 11 had made its last step"},
    };
    const long long ms = 1000000;
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        char text[4][640];
        const char *t[4] = {text[0], text[1], text[2], text[3]};
        const char *fmt = cases[c].in_task ? task : plain;
        for (int i = 0; i < cases[c].n; i++) {
            long long f = cases[c].p[i].from_ms * ms;
            char started[64] = "";
            if (cases[c].p[i].started_ms != NONE && cases[c].p[i].ppid > 0)
                snprintf(started, sizeof(started), "started %lld %d\n",
                         cases[c].p[i].started_ms * ms, cases[c].p[i].ppid);
            else if (cases[c].p[i].started_ms != NONE)
                snprintf(started, sizeof(started), "started %lld\n", cases[c].p[i].started_ms * ms);
            snprintf(text[i], sizeof(text[i]), fmt, cases[c].p[i].pid, started, cases[c].p[i].host,
                     cases[c].p[i].rank, f, f + 10 * ms, f + 10 * ms, f + 20 * ms);
        }
        struct cg_shard *sh = NULL;
        size_t n = load_shards(t, (size_t)cases[c].n, &sh);
        struct cg_err err;
        cg_err_init(&err);
        int rc = cg_shard_check_restarts(sh, n, &err);
        if (cases[c].refused == NULL && rc != 0)
            fail_msg("%s: refused: %s", cases[c].what, err.msg);
        if (cases[c].refused != NULL && (rc != CG_ECANARY || !strstr(err.msg, cases[c].refused)))
            fail_msg("%s: not refused as a restart (%d): '%s'", cases[c].what, rc,
                     rc != 0 ? err.msg : "");
        cg_shard_free_all(sh, n);
    }
}

static void test_shard_world__a_complete_world_passes(void **state)
{
    (void)state;
    struct cg_shard sh[4];
    for (int i = 0; i < 4; i++)
        slurm_shard(&sh[i], i, 4, i / 2);
    struct cg_err err;
    cg_err_init(&err);
    assert_int_equal(cg_shard_check_world(sh, 4, "/usr/lib/canary-gate", false, &err), 0);
    for (int i = 0; i < 4; i++)
        cg_shard_release(&sh[i]);
}

/* Merged into a run, each rank keeps its node and its process's GPU model (the shard's first
 * "device" line; none: unknown), which the node shape names. */
static void test_shard_world__ranks_keep_their_node_and_gpu_model(void **state)
{
    (void)state;
    struct cg_shard sh[4];
    for (int i = 0; i < 4; i++) {
        char text[512];
        snprintf(text, sizeof(text),
                 "canary-gate-shard 1\npid %d\nhost vm\nslurm_procid %d\nslurm_nodeid %d\n"
                 "slurm_ntasks 4\nslurm_node n%d\nslurm_step 0\nwarmup 0\n%ss 0 100 200 -1\n"
                 "s 1 200 300 -1\n",
                 1000 + i, i, i / 2, i / 2 + 1, i < 3 ? "device 0 NVIDIA H100 80GB HBM3\n" : "");
        struct cg_err err;
        assert_int_equal(cg_shard_parse(text, strlen(text), "t", &sh[i], &err), 0);
    }
    struct cg_artifact a;
    cg_artifact_init(&a);
    struct cg_run *run = cg_artifact_add_run(&a);
    struct cg_shard_merge_opts o = {0, 2, -1};
    struct cg_err err;
    cg_err_init(&err);
    assert_int_equal(cg_shard_merge(sh, 4, &o, run, &err), 0);
    assert_int_equal(run->n_ranks, 4);
    assert_string_equal(run->ranks[0].gpu_model, "NVIDIA H100 80GB HBM3");
    assert_string_equal(run->ranks[2].node, "n2");
    assert_null(run->ranks[3].gpu_model);
    char shape[160];
    assert_int_equal(cg_ranks_shape(run->ranks, run->n_ranks, shape, sizeof(shape)), 0);
    assert_string_equal(shape, "2 nodes of 2 ranks (NVIDIA H100 80GB HBM3)");
    cg_artifact_release(&a);
    for (int i = 0; i < 4; i++)
        cg_shard_release(&sh[i]);
}

static void test_shard_world__missing_ranks_are_named_with_their_node(void **state)
{
    (void)state;
    /* 16 ranks, 8 per node: node n2 (ranks 8-15) wrote nothing */
    struct cg_shard sh[8];
    for (int i = 0; i < 8; i++)
        slurm_shard(&sh[i], i, 16, 0);
    struct cg_err err;
    cg_err_init(&err);
    assert_int_equal(cg_shard_check_world(sh, 8, "/usr/lib/canary-gate", false, &err), CG_ECANARY);
    /* no shard reports node index 1: its name, and that it is one node, cannot be told */
    assert_non_null(strstr(err.msg, "ranks 8\xe2\x80\x93"
                                    "15 of a world of 16 wrote nothing"));
    assert_null(strstr(err.msg, "node index"));
    assert_non_null(strstr(err.msg, "installed at /usr/lib/canary-gate"));
    assert_non_null(strstr(err.msg, "CANARY_GATE_"));
    for (int i = 0; i < 8; i++)
        cg_shard_release(&sh[i]);
    /* 4 ranks, 2 per node: rank 2 on n2 missing, its node named by rank 3's shard */
    struct cg_shard three[3];
    slurm_shard(&three[0], 0, 4, 0);
    slurm_shard(&three[1], 1, 4, 0);
    slurm_shard(&three[2], 3, 4, 1);
    assert_int_equal(cg_shard_check_world(three, 3, "/opt/cg", false, &err), CG_ECANARY);
    assert_non_null(strstr(err.msg, "rank 2 (node n2) of a world of 4 wrote nothing: is "
                                    "canary-gate installed at /opt/cg on n2"));
    for (int i = 0; i < 3; i++)
        cg_shard_release(&three[i]);
}

/* A world far larger than the shards present is checked in one pass: 2 shards of a world of
 * 65536 took 16 s of CPU (the node of each missing rank was sought over the whole world), and the
 * message named node indices made up from "2 ranks on node 0"; the missing ranks listed are
 * capped, the others counted. */
static void test_shard_world__a_large_world_is_checked_in_linear_time(void **state)
{
    (void)state;
    struct cg_shard sh[2];
    struct cg_err err;
    cg_err_init(&err);
    for (int i = 0; i < 2; i++) {
        char text[256];
        snprintf(text, sizeof(text),
                 "canary-gate-shard 1\npid %d\nrank %d\nhost vm\nworld_size 65536\n"
                 "group_rank 0\nwarmup 0\ns 0 100 200 -1\n",
                 10 + i, i);
        assert_int_equal(cg_shard_parse(text, strlen(text), "t", &sh[i], &err), 0);
    }
    clock_t t0 = clock();
    assert_int_equal(cg_shard_check_world(sh, 2, "/x", false, &err), CG_ECANARY);
    double cpu_s = (double)(clock() - t0) / CLOCKS_PER_SEC;
    if (cpu_s > 0.5)
        fail_msg("the world check took %.1f s of CPU", cpu_s);
    assert_non_null(strstr(err.msg, "ranks 2\xe2\x80\x93"
                                    "65535 of a world of 65536 wrote nothing"));
    assert_null(strstr(err.msg, "node index"));
    for (int i = 0; i < 2; i++)
        cg_shard_release(&sh[i]);
    /* every other rank of 64 missing: four listed, the other 28 counted */
    struct cg_shard even[32];
    for (int i = 0; i < 32; i++)
        slurm_shard(&even[i], 2 * i, 64, 0);
    assert_int_equal(cg_shard_check_world(even, 32, "/x", false, &err), CG_ECANARY);
    assert_non_null(strstr(err.msg, "rank 1, rank 3, rank 5, rank 7 and 28 more of a world of 64 "
                                    "wrote nothing"));
    for (int i = 0; i < 32; i++)
        cg_shard_release(&even[i]);
}

/* A rank whose library loaded and wrote a shard but that marked no step (steps wrapped in
 * "if rank == 0", or named otherwise on one rank) is said to be so, with its pid and node: it
 * was "wrote nothing: is canary-gate installed ...", which sent the user after the install and
 * the launcher's environment, both fine. That advice stays for ranks with no shard at all. */
static void
test_shard_world__a_rank_that_marked_no_step_is_told_from_one_that_wrote_nothing(void **state)
{
    (void)state;
    struct cg_shard sh[2];
    struct cg_err err;
    cg_err_init(&err);
    for (int i = 0; i < 2; i++) {
        char text[256];
        snprintf(text, sizeof(text),
                 "canary-gate-shard 1\npid %d\nrank %d\nhost vm\nworld_size %d\nwarmup 0\n"
                 "step_range train\\x09step\n%s",
                 10 + i, i, 2, i == 0 ? "s 0 100 200 -1\n" : "");
        assert_int_equal(cg_shard_parse(text, strlen(text), "t", &sh[i], &err), 0);
    }
    assert_int_equal(cg_shard_check_world(sh, 2, "/x", false, &err), CG_ECANARY);
    assert_non_null(strstr(err.msg, "rank 1 (pid 11 on vm) of a world of 2 wrote a shard but "
                                    "marked no step named 'train?step'"));
    assert_null(strstr(err.msg, "installed"));
    cg_shard_release(&sh[1]);
    /* in a world of 3, rank 1 marked no step and rank 2 wrote nothing: both said */
    const char *one = "canary-gate-shard 1\npid 11\nrank 1\nhost vm\nworld_size 3\nwarmup 0\n"
                      "step_range step\n";
    assert_int_equal(cg_shard_parse(one, strlen(one), "t", &sh[1], &err), 0);
    sh[0].world_size = 3;
    assert_int_equal(cg_shard_check_world(sh, 2, "/x", false, &err), CG_ECANARY);
    assert_non_null(strstr(err.msg, "rank 1 (pid 11 on vm) wrote a shard but marked no step "
                                    "named 'step'; rank 2 of a world of 3 wrote nothing: is "
                                    "canary-gate installed at /x"));
    for (int i = 0; i < 2; i++)
        cg_shard_release(&sh[i]);
    /* six ranks of 8 with no step: four listed, two counted */
    struct cg_shard eight[8];
    for (int i = 0; i < 8; i++) {
        char text[256];
        snprintf(text, sizeof(text),
                 "canary-gate-shard 1\npid %d\nrank %d\nhost vm\nworld_size 8\nwarmup 0\n"
                 "step_range step\n%s",
                 10 + i, i, i < 2 ? "s 0 100 200 -1\n" : "");
        assert_int_equal(cg_shard_parse(text, strlen(text), "t", &eight[i], &err), 0);
    }
    assert_int_equal(cg_shard_check_world(eight, 8, "/x", false, &err), CG_ECANARY);
    assert_non_null(strstr(err.msg, "ranks 2 (pid 12 on vm), 3 (pid 13 on vm), 4 (pid 14 on vm), "
                                    "5 (pid 15 on vm) and 2 more of a world of 8 each wrote a "
                                    "shard but marked no step named 'step'"));
    for (int i = 0; i < 8; i++)
        cg_shard_release(&eight[i]);
}

/* A rank still starting (a slow import, slow data loading) when the ranks with steps had made
 * theirs is stopped by the gate with them: its shard holds no step and no "end". It was told
 * "wrote a shard but marked no step named 'step': every rank must mark its steps", advice about
 * its step marking, which was fine. Now it is said to have been stopped before its first step;
 * the advice to mark steps stays for a rank that ended on its own without one. */
static void test_shard_world__a_rank_the_gate_stopped_before_its_first_step_is_said_so(void **state)
{
    (void)state;
    struct cg_shard sh[3];
    struct cg_err err;
    cg_err_init(&err);
    for (int i = 0; i < 3; i++) {
        char text[256];
        snprintf(text, sizeof(text),
                 "canary-gate-shard 1\npid %d\nrank %d\nhost vm\nworld_size 3\nwarmup 0\n"
                 "step_range step\n%s%s",
                 10 + i, i, i == 0 ? "s 0 100 200 -1\n" : "", i == 2 ? "end\n" : "");
        assert_int_equal(cg_shard_parse(text, strlen(text), "t", &sh[i], &err), 0);
    }
    /* rank 1 cut off by the stop, rank 2 ended on its own without a step */
    assert_int_equal(cg_shard_check_world(sh, 3, "/x", true, &err), CG_ECANARY);
    assert_non_null(strstr(err.msg, "rank 2 (pid 12 on vm) of a world of 3 wrote a shard but "
                                    "marked no step named 'step': every rank must mark its steps"));
    assert_non_null(strstr(err.msg, "rank 1 (pid 11 on vm) of a world of 3 was stopped before its "
                                    "first step named 'step': the other ranks had made their "
                                    "steps"));
    /* the same shards of a canary that ended on its own: rank 1's shard was cut otherwise */
    assert_int_equal(cg_shard_check_world(sh, 3, "/x", false, &err), CG_ECANARY);
    assert_null(strstr(err.msg, "stopped"));
    assert_non_null(strstr(err.msg, "ranks 1 (pid 11 on vm), 2 (pid 12 on vm) of a world of 3 "
                                    "each wrote a shard but marked no step"));
    for (int i = 0; i < 3; i++)
        cg_shard_release(&sh[i]);
}

static void test_shard_world__duplicates_and_disagreements_fail(void **state)
{
    (void)state;
    struct cg_shard sh[3];
    struct cg_err err;
    cg_err_init(&err);
    slurm_shard(&sh[0], 0, 2, 0);
    slurm_shard(&sh[1], 1, 2, 1);
    slurm_shard(&sh[2], 1, 2, 1);
    sh[2].pid = 99;
    sh[2].slurm_step = 1; /* task 1 of another step: two launches */
    assert_int_equal(cg_shard_check_world(sh, 3, "/x", false, &err), CG_ECANARY);
    assert_non_null(strstr(err.msg, "rank 1 reported twice (pid 1001 on n2, pid 99 on n2)"));
    sh[2].slurm_ntasks = 3;
    assert_int_equal(cg_shard_check_world(sh, 3, "/x", false, &err), CG_ECANARY);
    assert_non_null(strstr(err.msg, "disagree on the world's size (2 and 3)"));
    sh[2].slurm_ntasks = 2;
    sh[2].slurm_procid = 5;
    assert_int_equal(cg_shard_check_world(sh, 3, "/x", false, &err), CG_ECANARY);
    assert_non_null(strstr(err.msg, "rank 5 on n2 is outside a world of 2 ranks"));
    /* no world size known (RANK without WORLD_SIZE): a rank twice still fails; it was merged
     * into an artifact that then did not load ("rank 1 twice") */
    for (int i = 0; i < 3; i++)
        sh[i].slurm_ntasks = -1;
    sh[2].slurm_procid = 1;
    assert_int_equal(cg_shard_check_world(sh, 3, "/x", false, &err), CG_ECANARY);
    assert_non_null(strstr(err.msg, "rank 1 reported twice"));
    for (int i = 0; i < 3; i++)
        cg_shard_release(&sh[i]);
}

static void test_shard_world__shards_without_rank_or_steps_take_no_part(void **state)
{
    (void)state;
    struct cg_shard sh[4];
    struct cg_err err;
    cg_err_init(&err);
    slurm_shard(&sh[0], 0, 2, 0);
    slurm_shard(&sh[1], 1, 2, 1);
    /* a launcher's agent with Slurm's rank 0 but no step, and a process with no rank */
    const char *agent =
        "canary-gate-shard 1\npid 5\nslurm_procid 0\nslurm_ntasks 2\nslurm_step 0\n";
    const char *plain = "canary-gate-shard 1\npid 6\ns 0 1 2 -1\n";
    assert_int_equal(cg_shard_parse(agent, strlen(agent), "a", &sh[2], &err), 0);
    assert_int_equal(cg_shard_parse(plain, strlen(plain), "p", &sh[3], &err), 0);
    assert_int_equal(cg_shard_check_world(sh, 4, "/x", false, &err), 0);
    /* no shard reports a world: nothing to check */
    assert_int_equal(cg_shard_check_world(&sh[3], 1, "/x", false, &err), 0);
    for (int i = 0; i < 4; i++)
        cg_shard_release(&sh[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shard_world__placement_lines_are_read),
        cmocka_unit_test(test_shard_world__slurm_variables_are_a_rank_only_for_an_srun_task),
        cmocka_unit_test(test_shard_world__the_world_falls_back_to_mpi_size_then_slurm_ntasks),
        cmocka_unit_test(test_shard_world__processes_of_one_srun_task_are_not_its_rank_twice),
        cmocka_unit_test(test_shard_world__a_process_run_twice_one_after_the_other_is_a_restart),
        cmocka_unit_test(test_shard_world__a_complete_world_passes),
        cmocka_unit_test(test_shard_world__ranks_keep_their_node_and_gpu_model),
        cmocka_unit_test(test_shard_world__missing_ranks_are_named_with_their_node),
        cmocka_unit_test(test_shard_world__a_large_world_is_checked_in_linear_time),
        cmocka_unit_test(
            test_shard_world__a_rank_that_marked_no_step_is_told_from_one_that_wrote_nothing),
        cmocka_unit_test(
            test_shard_world__a_rank_the_gate_stopped_before_its_first_step_is_said_so),
        cmocka_unit_test(test_shard_world__duplicates_and_disagreements_fail),
        cmocka_unit_test(test_shard_world__shards_without_rank_or_steps_take_no_part),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
