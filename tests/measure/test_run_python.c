/*
 * test_run_python: `canary-gate run` end to end with real PyTorch scripts (/usr/bin/python3 and
 * its torch, CPU), for what only a Python training job does: a script that execs itself (to
 * relaunch under torchrun, or with a changed environment), a crash after the measured window,
 * processes started by multiprocessing's fork and forkserver, a script whose own output names a
 * network failure. Every test is skipped when python3 cannot import torch (the one that needs no
 * torch, when there is no python3). Each runs in a private directory (support/workdir.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "artifact.h"
#include "proc.h"
#include "workdir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PYTHON "/usr/bin/python3"

static bool have_torch(void)
{
    static int known = -1;
    if (known < 0)
        known =
            access(PYTHON, X_OK) == 0 && system(PYTHON " -c 'import torch' >/dev/null 2>&1") == 0;
    return known == 1;
}

#define NEED_TORCH()                                                                               \
    do {                                                                                           \
        if (!have_torch())                                                                         \
            skip();                                                                                \
    } while (0)

/* Writes text to <dir>/<name>. */
static void write_file(const struct cg_workdir *w, const char *name, const char *text)
{
    FILE *f = fopen(cg_workdir_in(w, name), "w");
    assert_non_null(f);
    assert_int_equal(fputs(text, f) >= 0, 1);
    assert_int_equal(fclose(f), 0);
}

#define NEED_PYTHON()                                                                              \
    do {                                                                                           \
        if (access(PYTHON, X_OK) != 0)                                                             \
            skip();                                                                                \
    } while (0)

static void load(const struct cg_workdir *w, const char *name, struct cg_artifact *a)
{
    struct cg_err err;
    cg_err_init(&err);
    if (cg_artifact_load(cg_workdir_in(w, name), a, &err) != 0)
        fail_msg("%s", err.msg);
}

/* A script that execs itself once after importing torch (the library already started in it,
 * under the same pid) is measured: the exec'd image gets a shard of its own, and the first
 * image's shard, which has no step, is finished rather than left as a crashed process's. */
static void test_run__a_script_that_execs_itself_is_measured(void **state)
{
    NEED_TORCH();
    const struct cg_workdir *w = *state;
    write_file(w, "reexec.py",
               "import os, sys, torch\n"
               "if os.environ.get('REEXECED') != '1':\n"
               "    os.environ['REEXECED'] = '1'\n"
               "    os.execv(sys.executable, [sys.executable] + sys.argv)\n"
               "torch.set_num_threads(1)\n"
               "model = torch.nn.Linear(8, 1); opt = torch.optim.SGD(model.parameters(), lr=1e-3)\n"
               "for i in range(6):\n"
               "    opt.zero_grad(); model(torch.randn(4, 8)).sum().backward(); opt.step()\n");
    struct cg_proc p;
    const char *args[] = {"run",     "--out", "re.json",      "--runs", "1",    "--warmup",  "1",
                          "--steps", "3",     "--let-finish", "--",     PYTHON, "reexec.py", NULL};
    int rc = cg_workdir_run(w, CG_TOOL_PATH, NULL, args, &p);
    if (rc != 0)
        fail_msg("exit %d:\n%s", rc, p.err);
    if (strstr(p.err, "without finishing its shard") != NULL)
        fail_msg("the first image's shard is said to be a crashed process's:\n%s", p.err);
    struct cg_artifact a;
    load(w, "re.json", &a);
    assert_int_equal(a.n_runs, 1);
    assert_int_equal(a.runs[0].n_steps, 3);
    cg_artifact_release(&a);
}

/* A script that execs itself 65 times (66 images of one process, each starting the library with
 * a range before it execs) is measured: every image finds a shard name of its own, however many
 * came before it, and each earlier image's shard is finished. */
static void test_run__a_script_that_execs_itself_65_times_is_measured(void **state)
{
    NEED_PYTHON();
    const struct cg_workdir *w = *state;
    write_file(w, "reexec65.py",
               "import os, sys, canary_gate\n"
               "n = int(os.environ.get('IMAGE', '0'))\n"
               "with canary_gate.range('image'):\n"
               "    pass\n"
               "if n < 65:\n"
               "    os.environ['IMAGE'] = str(n + 1)\n"
               "    os.execv(sys.executable, [sys.executable] + sys.argv)\n"
               "for i in range(4):\n"
               "    with canary_gate.step():\n"
               "        pass\n");
    struct cg_proc p;
    const char *args[] = {"run",      "--out", "re65.json",   "--runs", "1",
                          "--warmup", "1",     "--steps",     "3",      "--let-finish",
                          "--",       PYTHON,  "reexec65.py", NULL};
    int rc = cg_workdir_run(w, CG_TOOL_PATH, NULL, args, &p);
    if (rc != 0)
        fail_msg("exit %d:\n%s", rc, p.err);
    if (strstr(p.err, "without finishing its shard") != NULL)
        fail_msg("an earlier image's shard is said to be a crashed process's:\n%s", p.err);
    struct cg_artifact a;
    load(w, "re65.json", &a);
    assert_int_equal(a.n_runs, 1);
    assert_int_equal(a.runs[0].n_steps, 3);
    cg_artifact_release(&a);
}

/* A script that makes steps, then execs itself and makes steps again (one pid, two images): the
 * images are one process's, the earlier merged as another process (docs/collector.md "Exec"),
 * never the process run again after itself. */
static void test_run__a_script_that_execs_itself_after_steps_is_one_process(void **state)
{
    NEED_TORCH();
    const struct cg_workdir *w = *state;
    write_file(w, "reexec_steps.py",
               "import os, sys, torch\n"
               "torch.set_num_threads(1)\n"
               "model = torch.nn.Linear(8, 1); opt = torch.optim.SGD(model.parameters(), lr=1e-3)\n"
               "for i in range(6):\n"
               "    opt.zero_grad(); model(torch.randn(4, 8)).sum().backward(); opt.step()\n"
               "if os.environ.get('REEXECED') != '1':\n"
               "    os.environ['REEXECED'] = '1'\n"
               "    os.execv(sys.executable, [sys.executable] + sys.argv)\n");
    struct cg_proc p;
    const char *args[] = {"run",      "--out", "rs.json",         "--runs", "1",
                          "--warmup", "1",     "--steps",         "3",      "--let-finish",
                          "--",       PYTHON,  "reexec_steps.py", NULL};
    int rc = cg_workdir_run(w, CG_TOOL_PATH, NULL, args, &p);
    if (rc != 0)
        fail_msg("exit %d:\n%s", rc, p.err);
    struct cg_artifact a;
    load(w, "rs.json", &a);
    assert_int_equal(a.n_runs, 1);
    assert_int_equal(a.runs[0].n_steps, 3);
    cg_artifact_release(&a);
}

/* A single-process script that prints a network client's "Connection refused" (a wandb retry)
 * and then fails on a bug of its own fails as the canary's failure: nothing says infrastructure,
 * and nothing says "a peer rank" of a process that has none. */
static void
test_run__a_scripts_own_error_after_a_network_message_is_not_infrastructure(void **state)
{
    NEED_TORCH();
    const struct cg_workdir *w = *state;
    write_file(w, "wandb_like.py",
               "import torch\n"
               "print('wandb: Network error (ConnectionError), entering retry loop: [Errno 111] "
               "Connection refused', flush=True)\n"
               "model = torch.nn.Linear(32, 1); opt = torch.optim.SGD(model.parameters(), "
               "lr=1e-3)\n"
               "for i in range(3):\n"
               "    opt.zero_grad(); model(torch.randn(4, 32)).sum().backward(); opt.step()\n"
               "model(torch.randn(4, 31))\n");
    struct cg_proc p;
    const char *args[] = {"run", "--out",   "w.json", "--runs", "1",    "--warmup",
                          "1",   "--steps", "3",      "--",     PYTHON, "wandb_like.py",
                          NULL};
    assert_int_equal(cg_workdir_run(w, CG_TOOL_PATH, NULL, args, &p), 3);
    assert_non_null(strstr(p.err, "canary exited with status 1 in run 1 of 1"));
    if (strstr(p.err, "infrastructure") != NULL || strstr(p.err, "peer rank") != NULL)
        fail_msg("the script's own error taken for infrastructure:\n%s", p.err);
}

/* Hogwild training: the optimizers step only in processes torch.multiprocessing forked without
 * exec, whose steps the library does not see. The run marks no step, and the hint says why and
 * what to do (the 'spawn' start method), not only "no optimizer stepped". */
static void test_run__steps_only_in_forked_processes_get_a_hint_naming_spawn(void **state)
{
    NEED_TORCH();
    const struct cg_workdir *w = *state;
    write_file(w, "hog.py",
               "import torch, torch.multiprocessing as mp\n"
               "torch.set_num_threads(1)\n"
               "def train(model):\n"
               "    opt = torch.optim.SGD(model.parameters(), lr=1e-3)\n"
               "    for i in range(10):\n"
               "        opt.zero_grad(); model(torch.randn(4, 8)).sum().backward(); opt.step()\n"
               "if __name__ == '__main__':\n"
               "    mp.set_start_method('fork')\n"
               "    model = torch.nn.Linear(8, 1); model.share_memory()\n"
               "    ps = [mp.Process(target=train, args=(model,)) for _ in range(2)]\n"
               "    [p.start() for p in ps]; [p.join() for p in ps]\n");
    struct cg_proc p;
    const char *args[] = {"run",     "--out", "hog.json", "--runs", "1",      "--warmup", "1",
                          "--steps", "3",     "--",       PYTHON,   "hog.py", NULL};
    assert_int_equal(cg_workdir_run(w, CG_TOOL_PATH, NULL, args, &p), 3);
    assert_non_null(strstr(p.err, "canary marked no step"));
    if (strstr(p.err, "forked without exec") == NULL || strstr(p.err, "'spawn'") == NULL)
        fail_msg("the hint does not name forked processes and spawn:\n%s", p.err);
}

/* Hogwild training with the 'spawn' start method (what the hint above asks for): two workers
 * started together, each importing torch before its first optimizer step, the second also
 * loading its data for 1 s. The first has made its few steps before the second makes its first;
 * they started together, so they are one run's processes, measured: never a restart. */
static void test_run__hogwild_with_spawn_is_measured_however_late_a_worker_steps(void **state)
{
    NEED_TORCH();
    const struct cg_workdir *w = *state;
    write_file(w, "hog_spawn.py",
               "import time, torch, torch.multiprocessing as mp\n"
               "def train(i, model):\n"
               "    torch.set_num_threads(1)\n"
               "    if i == 1:\n"
               "        time.sleep(1)\n"
               "    opt = torch.optim.SGD(model.parameters(), lr=1e-3)\n"
               "    for _ in range(10):\n"
               "        opt.zero_grad(); model(torch.randn(4, 8)).sum().backward(); opt.step()\n"
               "if __name__ == '__main__':\n"
               "    mp.set_start_method('spawn')\n"
               "    model = torch.nn.Linear(8, 1); model.share_memory()\n"
               "    ps = [mp.Process(target=train, args=(i, model)) for i in range(2)]\n"
               "    [p.start() for p in ps]; [p.join() for p in ps]\n");
    struct cg_proc p;
    const char *args[] = {"run",      "--out", "hs.json",      "--runs", "1",
                          "--warmup", "1",     "--steps",      "3",      "--let-finish",
                          "--",       PYTHON,  "hog_spawn.py", NULL};
    int rc = cg_workdir_run(w, CG_TOOL_PATH, NULL, args, &p);
    if (rc != 0)
        fail_msg("exit %d:\n%s", rc, p.err);
    struct cg_artifact a;
    load(w, "hs.json", &a);
    assert_int_equal(a.n_runs, 1);
    assert_int_equal(a.runs[0].n_steps, 3);
    cg_artifact_release(&a);
}

/* A DataLoader whose workers start by forkserver: each worker loads the library afresh (the
 * forkserver never started it) and ends with os._exit, which runs no exit handler, so its shard,
 * with no step, stays unfinished. That is no crash, and nothing is said of it. */
static void test_run__forkserver_workers_without_steps_are_no_crash(void **state)
{
    NEED_TORCH();
    const struct cg_workdir *w = *state;
    write_file(w, "dl.py",
               "import torch\n"
               "from torch.utils.data import DataLoader, TensorDataset\n"
               "torch.set_num_threads(1)\n"
               "model = torch.nn.Linear(8, 1); opt = torch.optim.SGD(model.parameters(), lr=1e-3)\n"
               "ds = TensorDataset(torch.randn(64, 8))\n"
               "if __name__ == '__main__':\n"
               "    dl = DataLoader(ds, batch_size=8, num_workers=2, "
               "multiprocessing_context='forkserver')\n"
               "    for (x,) in dl:\n"
               "        opt.zero_grad(); model(x).sum().backward(); opt.step()\n");
    struct cg_proc p;
    const char *args[] = {"run",     "--out", "dl.json",      "--runs", "1",    "--warmup", "1",
                          "--steps", "3",     "--let-finish", "--",     PYTHON, "dl.py",    NULL};
    int rc = cg_workdir_run(w, CG_TOOL_PATH, NULL, args, &p);
    if (rc != 0)
        fail_msg("exit %d:\n%s", rc, p.err);
    if (strstr(p.err, "without finishing its shard") != NULL)
        fail_msg("a worker that ended normally is said to have crashed:\n%s", p.err);
}

/* A script that trains and then execs a program that does not load the library (a shell's
 * `exec`, os.execv of a tool): nothing can finish the script's shard, and the warning said the
 * process was "killed or crashed"; it names the exec as the other way a shard stays unfinished. */
static void test_run__an_exec_of_another_program_is_named_in_the_warning(void **state)
{
    NEED_TORCH();
    const struct cg_workdir *w = *state;
    write_file(w, "then_exec.py",
               "import os, torch\n"
               "torch.set_num_threads(1)\n"
               "model = torch.nn.Linear(8, 1); opt = torch.optim.SGD(model.parameters(), lr=1e-3)\n"
               "for i in range(6):\n"
               "    opt.zero_grad(); model(torch.randn(4, 8)).sum().backward(); opt.step()\n"
               "os.execv('/bin/true', ['true'])\n");
    struct cg_proc p;
    const char *args[] = {"run",      "--out", "x.json",       "--runs", "1",
                          "--warmup", "1",     "--steps",      "3",      "--let-finish",
                          "--",       PYTHON,  "then_exec.py", NULL};
    int rc = cg_workdir_run(w, CG_TOOL_PATH, NULL, args, &p);
    if (rc != 0)
        fail_msg("exit %d:\n%s", rc, p.err);
    if (strstr(p.err, "without finishing its shard (killed, crashed, or it exec'd a program "
                      "that does not load the library)") == NULL)
        fail_msg("the warning does not name the exec:\n%s", p.err);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_run__a_script_that_execs_itself_is_measured,
                                        cg_workdir_setup, cg_workdir_teardown),
        cmocka_unit_test_setup_teardown(test_run__a_script_that_execs_itself_65_times_is_measured,
                                        cg_workdir_setup, cg_workdir_teardown),
        cmocka_unit_test_setup_teardown(
            test_run__a_script_that_execs_itself_after_steps_is_one_process, cg_workdir_setup,
            cg_workdir_teardown),
        cmocka_unit_test_setup_teardown(
            test_run__a_scripts_own_error_after_a_network_message_is_not_infrastructure,
            cg_workdir_setup, cg_workdir_teardown),
        cmocka_unit_test_setup_teardown(
            test_run__steps_only_in_forked_processes_get_a_hint_naming_spawn, cg_workdir_setup,
            cg_workdir_teardown),
        cmocka_unit_test_setup_teardown(
            test_run__hogwild_with_spawn_is_measured_however_late_a_worker_steps, cg_workdir_setup,
            cg_workdir_teardown),
        cmocka_unit_test_setup_teardown(test_run__forkserver_workers_without_steps_are_no_crash,
                                        cg_workdir_setup, cg_workdir_teardown),
        cmocka_unit_test_setup_teardown(
            test_run__an_exec_of_another_program_is_named_in_the_warning, cg_workdir_setup,
            cg_workdir_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
