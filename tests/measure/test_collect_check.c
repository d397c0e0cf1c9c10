/*
 * test_collect_check: why a canary run failed, from what the run left
 * (src/measure/collect_check.c): the hint a failure gives, told by the failure's cause, not its
 * kind alone; and an infrastructure failure read from the log (src/measure/multinode.c) only
 * where the run's processes and the log's last error support it. The logs are cut from real
 * ones: torch 1.13's torchrun and gloo, a wandb client, Slurm's srun.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "collect.h"
#include "err.h"
#include "multinode.h"
#include "say.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

struct heard {
    char text[4096];
};

static void hear(const struct cg_say *s, enum cg_say_kind kind, const char *text)
{
    (void)kind;
    struct heard *h = s->ctx;
    size_t have = strlen(h->text);
    snprintf(h->text + have, sizeof(h->text) - have, "%s\n", text);
}

/* A shard the library could not open or write: the hint follows the errno. Room or rights in
 * TMPDIR for ENOSPC, EDQUOT, EACCES, EROFS; the file size limit for EFBIG; the directory taken
 * away for ENOTDIR and ENOENT; nothing to say about TMPDIR for an errno it cannot mend (EEXIST,
 * EIO). */
static void test_collect_check__shard_write_hint_follows_the_errno(void **state)
{
    (void)state;
    static const struct {
        int e;
        const char *want, *absent; /* want NULL: no hint at all */
    } cases[] = {
        {ENOSPC, "free space there", NULL},
        {EDQUOT, "free space there", NULL},
        {EACCES, "a directory the canary can write", "free space"},
        {EROFS, "a directory the canary can write", "free space"},
        {EFBIG, "file size limit (ulimit -f", "TMPDIR"},
        {ENOTDIR, "removed or replaced while the canary ran", "free space"},
        {ENOENT, "removed or replaced while the canary ran", "free space"},
        {EEXIST, NULL, NULL},
        {EIO, NULL, NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct heard h = {""};
        struct cg_say say = {hear, &h, false};
        struct cg_collect_failure f = {.reason = CG_COLLECT_FAILED_SHARD_WRITE,
                                       .shard_errno = cases[i].e};
        struct cg_err err;
        cg_err_init(&err);
        cg_err_set(&err, CG_ECANARY, "the injection library could not write its shard");
        cg_collect_hint(&f, &err, NULL, &say);
        if (cases[i].want == NULL) {
            if (h.text[0] != '\0')
                fail_msg("%s: a hint that cannot help: %s", strerror(cases[i].e), h.text);
            continue;
        }
        if (strstr(h.text, cases[i].want) == NULL)
            fail_msg("%s: no '%s' in: %s", strerror(cases[i].e), cases[i].want, h.text);
        if (cases[i].absent != NULL && strstr(h.text, cases[i].absent) != NULL)
            fail_msg("%s: '%s' in: %s", strerror(cases[i].e), cases[i].absent, h.text);
    }
    /* with --shard-dir the directory named is that one */
    struct heard h = {""};
    struct cg_say say = {hear, &h, false};
    struct cg_collect_failure f = {.reason = CG_COLLECT_FAILED_SHARD_WRITE,
                                   .shard_errno = ENOSPC,
                                   .shard_dir = "/shared/shards"};
    struct cg_err err;
    cg_err_init(&err);
    cg_err_set(&err, CG_ECANARY, "x");
    cg_collect_hint(&f, &err, NULL, &say);
    assert_non_null(strstr(h.text, "--shard-dir ('/shared/shards')"));
}

#define SCRIPT_TRACEBACK(file, exception)                                                          \
    "Traceback (most recent call last):\n"                                                         \
    "  File \"" file "\", line 9, in <module>\n"                                                   \
    "    opt.zero_grad(); model(x).sum().backward(); opt.step()\n"                                 \
    "  File \"/usr/lib/python3/dist-packages/torch/_tensor.py\", line 488, in backward\n"          \
    "    torch.autograd.backward(\n" exception "\n"

#define AGENT_TRACEBACK(exception)                                                                 \
    "Traceback (most recent call last):\n"                                                         \
    "  File \"<frozen runpy>\", line 198, in _run_module_as_main\n"                                \
    "  File \"/usr/lib/python3/dist-packages/torch/distributed/run.py\", line 766, in <module>\n"  \
    "    main()\n" exception "\n"

/* Which logs name an infrastructure failure, for which runs: the evidence must fit the run (a
 * peer or a rendezvous needs ranks, a node failure Slurm), and the canary's own last error must
 * not be another one. */
static void
test_multinode__infrastructure_is_claimed_only_where_the_evidence_supports_it(void **state)
{
    (void)state;
    static const struct cg_infra_scope one = {false, false}, ranks = {true, false},
                                       slurm = {true, true};
    static const struct {
        const char *what, *log;
        const struct cg_infra_scope *scope;
        const char *want; /* the reason, NULL: none */
        bool certain;
    } cases[] = {
        {"a single process printing a wandb retry, then its own shape error",
         "wandb: Network error (ConnectionError), entering retry loop: [Errno 111] Connection "
         "refused\n" SCRIPT_TRACEBACK("/w/wandb.py",
                                      "RuntimeError: mat1 and mat2 shapes cannot be multiplied "
                                      "(4x31 and 32x1)"),
         &one, NULL, false},
        {"a single process whose last line is a refused connection", "Connection refused\n", &one,
         NULL, false},
        {"ranks: the script's own error, then the agent's teardown",
         SCRIPT_TRACEBACK("/tmp/hp/ddp.py",
                          "RuntimeError: [./gloo/transport/tcp/pair.cc:598] Connection closed by "
                          "peer [127.0.0.1]:26009") "WARNING:torch.distributed.elastic.rendezvous."
                                                    "dynamic_rendezvous:The node "
                                                    "'localhost_1_0' has failed to shutdown the "
                                                    "rendezvous 'x' due to an error of type "
                                                    "RendezvousConnectionError.\n" AGENT_TRACEBACK(
                                                        "torch.distributed.elastic.multiprocessing."
                                                        "errors.ChildFailedError:"),
         &ranks, NULL, false},
        {"ranks: lines prefixed by the launcher, the script's own error last",
         "[default0]:Traceback (most recent call last):\n"
         "[default0]:  File \"/w/train.py\", line 3, in <module>\n"
         "[default0]:ValueError: shape mismatch in the new loss\n"
         "Connection reset by peer\n",
         &ranks, NULL, false},
        {"ranks: PyTorch's own rank prefix ('[rank0]: '), the script's own error last",
         "[rank0]: wandb: Network error (ConnectionError): Connection refused\n"
         "[rank0]: Traceback (most recent call last):\n"
         "[rank0]:   File \"/w/train.py\", line 3, in <module>\n"
         "[rank0]: RuntimeError: mat1 and mat2 shapes cannot be multiplied (4x31 and 32x1)\n",
         &ranks, NULL, false},
        {"ranks: PyTorch's own rank prefix, a reset connection in the script's last error",
         "[rank1]: Traceback (most recent call last):\n"
         "[rank1]:   File \"/w/train.py\", line 9, in <module>\n"
         "[rank1]: RuntimeError: [pair.cc:589] Read error [10.0.0.2]:4312: Connection reset by "
         "peer\n",
         &ranks, "a connection between ranks was reset", false},
        {"ranks: an NCCL watchdog, no traceback",
         "step 3\n[E ProcessGroupNCCL.cpp:828] [Rank 1] Watchdog caught collective operation "
         "timeout: WorkNCCL(SeqNum=5)\n",
         &ranks, "an NCCL collective timed out", false},
        {"one process: the same NCCL watchdog is no claim",
         "[E ProcessGroupNCCL.cpp:828] [Rank 1] Watchdog caught collective operation timeout\n",
         &one, NULL, false},
        {"ranks: the script's init_process_group refused",
         SCRIPT_TRACEBACK("/w/train.py",
                          "torch.distributed.DistNetworkError: Connection refused (errno: 111)"),
         &ranks, "a connection was refused", false},
        {"ranks: the agent's rendezvous timed out, no rank ran",
         AGENT_TRACEBACK("torch.distributed.elastic.rendezvous.api.RendezvousTimeoutError"), &ranks,
         "the rendezvous timed out", false},
        {"ranks: a reset connection in the script's last error",
         "[default1]:" SCRIPT_TRACEBACK("/w/train.py",
                                        "[default1]:RuntimeError: [../third_party/gloo/gloo/"
                                        "transport/tcp/pair.cc:589] Read error [10.0.0.2]:4312: "
                                        "Connection reset by peer"),
         &ranks, "a connection between ranks was reset", false},
        {"Slurm's node failure under srun", "srun: error: Node failure on n2\n", &slurm,
         "Slurm reported a node failure", true},
        {"Slurm's node failure under srun, ranks' errors after it",
         "srun: error: Node failure on n2\n" SCRIPT_TRACEBACK(
             "/w/train.py", "RuntimeError: Connection closed by peer"),
         &slurm, "Slurm reported a node failure", true},
        {"a node failure line without Slurm", "srun: error: Node failure on n2\n", &ranks, NULL,
         false},
        {"a plain crash",
         "Traceback (most recent call last):\nZeroDivisionError: division by zero\n", &slurm, NULL,
         false},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct cg_infra_failure f;
        bool got =
            cg_multinode_infra_failure(cases[i].log, strlen(cases[i].log), cases[i].scope, &f);
        if (got != (cases[i].want != NULL))
            fail_msg("%s: %s", cases[i].what, got ? f.reason : "no claim");
        if (!got)
            continue;
        if (strstr(f.reason, cases[i].want) == NULL || f.certain != cases[i].certain)
            fail_msg("%s: '%s'%s", cases[i].what, f.reason, f.certain ? " (certain)" : "");
        if (f.line[0] == '\0' || strchr(f.line, '\n') != NULL)
            fail_msg("%s: the line quoted: '%s'", cases[i].what, f.line);
    }
    /* a single process is never "a peer rank" */
    struct cg_infra_failure f;
    const char *refused =
        SCRIPT_TRACEBACK("/w/train.py", "ConnectionRefusedError: [Errno 111] Connection refused");
    if (cg_multinode_infra_failure(refused, strlen(refused), &one, &f))
        fail_msg("one process: %s", f.reason);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_collect_check__shard_write_hint_follows_the_errno),
        cmocka_unit_test(
            test_multinode__infrastructure_is_claimed_only_where_the_evidence_supports_it),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
