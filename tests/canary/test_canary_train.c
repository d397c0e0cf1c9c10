/*
 * test_canary_train: the training canary, tested through the built canary-train binary
 * (fork/exec, never system()): the loss falls on the tiny preset, every backward pass matches
 * its numerical gradient, runs repeat exactly, variants change the work but not the numbers,
 * failures (non-finite loss, missing GPU, bad options) exit with their documented codes, and
 * the NVTX ranges have the documented layout (seen through canary/nvtx_probe.c).
 * Runs are short (tiny preset, a few to 50 steps); the whole file takes seconds.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define CANARY_PATH CG_BINARY_DIR "/canary-train"
#define OUT_MAX (256 * 1024)
#define ERR_MAX (16 * 1024)

struct run {
    int exit_code; /* -1 when killed by a signal */
    char out[OUT_MAX];
    char err[ERR_MAX];
    long maxrss_kb;
    double cpu_s; /* user + system CPU time of the child */
};

static void append(char *buf, size_t cap, size_t *len, const char *data, size_t n)
{
    if (*len + n >= cap)
        n = cap - 1 - *len;
    memcpy(buf + *len, data, n);
    *len += n;
    buf[*len] = '\0';
}

/* Runs canary-train with args (NULL-terminated, program name excluded) and collects its
 * output, exit code and resource use. */
static void run_canary(struct run *r, const char *const *args)
{
    const char *argv[64];
    int out_pipe[2], err_pipe[2];
    size_t n = 0;
    argv[n++] = CANARY_PATH;
    for (; args[n - 1] != NULL && n < 63; n++)
        argv[n] = args[n - 1];
    argv[n] = NULL;
    memset(r, 0, sizeof *r);
    assert_int_equal(pipe(out_pipe), 0);
    assert_int_equal(pipe(err_pipe), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(out_pipe[1], 1);
        dup2(err_pipe[1], 2);
        close(out_pipe[0]);
        close(err_pipe[0]);
        close(out_pipe[1]);
        close(err_pipe[1]);
        execv(CANARY_PATH, (char *const *)argv);
        _exit(127);
    }
    close(out_pipe[1]);
    close(err_pipe[1]);
    struct pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
    size_t out_len = 0, err_len = 0;
    int open_fds = 2;
    while (open_fds > 0) {
        if (poll(fds, 2, -1) < 0) {
            assert_int_equal(errno, EINTR);
            continue;
        }
        for (int i = 0; i < 2; i++) {
            if (fds[i].fd < 0 || fds[i].revents == 0)
                continue;
            char chunk[4096];
            ssize_t got = read(fds[i].fd, chunk, sizeof chunk);
            if (got <= 0) {
                close(fds[i].fd);
                fds[i].fd = -1;
                open_fds--;
            } else if (i == 0) {
                append(r->out, sizeof r->out, &out_len, chunk, (size_t)got);
            } else {
                append(r->err, sizeof r->err, &err_len, chunk, (size_t)got);
            }
        }
    }
    int status = 0;
    struct rusage ru;
    assert_int_equal(wait4(pid, &status, 0, &ru), pid);
    r->exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r->maxrss_kb = ru.ru_maxrss;
    r->cpu_s = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
               (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

/* The number after "key=" (or "key ") in line; fails the test when absent. */
static double number_after(const char *line, const char *key)
{
    const char *p = strstr(line, key);
    if (p == NULL)
        fail_msg("'%s' not found in: %s", key, line);
    p += strlen(key);
    char *end = NULL;
    double v = strtod(p, &end);
    if (end == p)
        fail_msg("no number after '%s' in: %s", key, line);
    return v;
}

/* The line of text starting with prefix; fails the test when absent. */
static const char *line_starting(const char *text, const char *prefix)
{
    size_t n = strlen(prefix);
    for (const char *p = text; p != NULL && *p != '\0'; p = strchr(p, '\n'), p = p ? p + 1 : p)
        if (strncmp(p, prefix, n) == 0)
            return p;
    fail_msg("no line starting '%s' in:\n%s", prefix, text);
    return NULL;
}

/* Copies the "step N loss X" parts of the output (no timings) into buf. */
static void loss_lines(const char *text, char *buf, size_t cap)
{
    size_t len = 0;
    buf[0] = '\0';
    for (const char *p = strstr(text, "step "); p != NULL; p = strstr(p + 1, "\nstep ")) {
        if (*p == '\n')
            p++;
        const char *ms = strstr(p, " ms ");
        const char *eol = strchr(p, '\n');
        if (ms == NULL || (eol != NULL && ms > eol))
            break;
        append(buf, cap, &len, p, (size_t)(ms - p));
        append(buf, cap, &len, "\n", 1);
    }
}

static void test_canary__loss_falls_in_50_steps(void **state)
{
    (void)state;
    static struct run r;
    const char *args[] = {"--device", "cpu", "--preset", "tiny", "--steps", "50", NULL};
    run_canary(&r, args);
    assert_int_equal(r.exit_code, 0);
    const char *done = line_starting(r.out, "done ");
    double first = number_after(done, "first_loss="), last = number_after(done, "last_loss=");
    /* an untrained model predicts uniformly: ln(64) = 4.16 nats */
    assert_true(fabs(first - log(64.0)) < 0.05);
    /* the stated margin: at least 1.5 nats lower after 50 steps (measured: 2.36) */
    if (!(last < first - 1.5))
        fail_msg("loss fell only from %.4f to %.4f in 50 steps", first, last);
}

static void test_canary__gradcheck_covers_every_backward(void **state)
{
    (void)state;
    static struct run r;
    const char *args[] = {"--gradcheck", NULL};
    static const char *const must_cover[] = {"embedding.wte",
                                             "embedding.wpe",
                                             "layernorm.x",
                                             "layernorm.w",
                                             "layernorm.b",
                                             "matmul.x",
                                             "matmul.w",
                                             "matmul.bias",
                                             "attention.qkv",
                                             "attention-naive.qkv",
                                             "gelu.x",
                                             "softmax-cross-entropy.logits",
                                             "model.wte",
                                             "model.h0.qkv_w",
                                             "model.h1.fcproj_b",
                                             "model.lnf_w",
                                             "model.head_w",
                                             "model-naive-attention.h0.qkv_w"};
    run_canary(&r, args);
    assert_int_equal(r.exit_code, 0);
    for (size_t i = 0; i < sizeof must_cover / sizeof must_cover[0]; i++) {
        char key[96];
        snprintf(key, sizeof key, "gradcheck %s ", must_cover[i]);
        const char *line = line_starting(r.out, key);
        double e = number_after(line, "max_rel_err ");
        if (!(e < 1e-5))
            fail_msg("%s: relative error %.3e", must_cover[i], e);
    }
    int lines = 0;
    for (const char *p = r.out; (p = strstr(p, "max_rel_err ")) != NULL; p++) {
        double e = number_after(p, "max_rel_err ");
        assert_true(e < 1e-5);
        lines++;
    }
    assert_true(lines >= 12 + 2 * 29); /* operators + both models' 29 tensors */
    line_starting(r.out, "gradcheck worst ");
}

static void test_canary__same_seed_same_losses(void **state)
{
    (void)state;
    static struct run a, b, c, d;
    static char la[8192], lb[8192], lc[8192], ld[8192];
    const char *args[] = {"--device", "cpu", "--steps",   "8", "--log-every", "1",
                          "--seed",   "7",   "--threads", "2", NULL};
    const char *one_thread[] = {"--device", "cpu", "--steps",   "8", "--log-every", "1",
                                "--seed",   "7",   "--threads", "1", NULL};
    const char *other_seed[] = {"--device", "cpu",    "--steps", "8", "--log-every",
                                "1",        "--seed", "8",       NULL};
    run_canary(&a, args);
    run_canary(&b, args);
    run_canary(&c, one_thread);
    run_canary(&d, other_seed);
    loss_lines(a.out, la, sizeof la);
    loss_lines(b.out, lb, sizeof lb);
    loss_lines(c.out, lc, sizeof lc);
    loss_lines(d.out, ld, sizeof ld);
    assert_true(strlen(la) > 50);
    assert_string_equal(la, lb); /* bit-for-bit: the printed 6 decimals agree */
    assert_string_equal(la, lc); /* the thread count changes speed, never results */
    assert_string_not_equal(la, ld);
}

static void test_canary__nonfinite_loss_exits_5(void **state)
{
    (void)state;
    static struct run r;
    const char *args[] = {"--device", "cpu", "--steps", "10", "--inject-nan-at", "3", NULL};
    run_canary(&r, args);
    assert_int_equal(r.exit_code, 5);
    assert_non_null(strstr(r.err, "non-finite loss (nan) at step 3"));
    assert_null(strchr(strchr(r.err, '\n') + 1, '\n')); /* one line */
    const char *lr[] = {"--device", "cpu", "--steps", "10", "--lr", "1e30", NULL};
    run_canary(&r, lr);
    assert_int_equal(r.exit_code, 5);
}

static void test_canary__cuda_without_gpu_exits_4(void **state)
{
    (void)state;
    static struct run r;
    const char *args[] = {"--device", "cuda", "--steps", "2", NULL};
    run_canary(&r, args);
    if (r.exit_code == 0) { /* a GPU machine: it trained on the device */
        assert_non_null(strstr(r.out, "device=cuda"));
        return;
    }
    assert_int_equal(r.exit_code, 4);
    assert_non_null(strstr(r.err, "canary-train: --device cuda: "));
    assert_null(strchr(strchr(r.err, '\n') + 1, '\n'));
    const char *auto_args[] = {"--device", "auto", "--steps", "1", NULL};
    run_canary(&r, auto_args);
    assert_int_equal(r.exit_code, 0);
    assert_non_null(strstr(r.out, "device=cpu"));
}

static void test_canary__bad_options_exit_2(void **state)
{
    (void)state;
    static struct run r;
    const char *cases[][5] = {{"--heads", "5", NULL},      {"--steps", "0", NULL},
                              {"--variant", "fast", NULL}, {"--bogus", NULL},
                              {"--seq", "12x", NULL},      {"--preset", "huge", NULL}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        run_canary(&r, cases[i]);
        if (r.exit_code != 2)
            fail_msg("%s %s: exit %d", cases[i][0], cases[i][1] ? cases[i][1] : "", r.exit_code);
        assert_non_null(strstr(r.err, "canary-train: "));
    }
}

static double first_loss_of(const char *variant, struct run *r)
{
    const char *args[] = {"--device", "cpu", "--steps", "5", "--variant", variant, NULL};
    run_canary(r, args);
    assert_int_equal(r->exit_code, 0);
    return number_after(line_starting(r->out, "done "), "last_loss=");
}

static void test_canary__variants_change_work_not_numbers(void **state)
{
    (void)state;
    static struct run base, r;
    double want = first_loss_of("none", &base);
    const char *base_header = line_starting(base.out, "canary-train ");
    static const char *const variants[] = {"slow-attention", "small-batch", "extra-sync",
                                           "mem-bloat"};
    for (size_t i = 0; i < sizeof variants / sizeof variants[0]; i++) {
        double got = first_loss_of(variants[i], &r);
        if (fabs(got - want) > 1e-4)
            fail_msg("%s: loss after 5 steps %.6f, baseline %.6f", variants[i], got, want);
        const char *h = line_starting(r.out, "canary-train ");
        /* every variant trains the same tokens per step */
        assert_true(number_after(h, "tokens_per_step=") ==
                    number_after(base_header, "tokens_per_step="));
        if (strcmp(variants[i], "small-batch") == 0)
            assert_true(number_after(h, "micro_batch=") == 1);
        if (strcmp(variants[i], "slow-attention") == 0) /* the full score matrix is kept too */
            assert_true(number_after(h, "activation_bytes=") >
                        number_after(base_header, "activation_bytes="));
    }
}

static void test_canary__mem_bloat_raises_peak_rss(void **state)
{
    (void)state;
    static struct run base, bloat;
    const char *a[] = {"--device", "cpu", "--steps", "2", "--batch", "16", NULL};
    const char *b[] = {"--device", "cpu",       "--steps",   "2", "--batch",
                       "16",       "--variant", "mem-bloat", NULL};
    run_canary(&base, a);
    run_canary(&bloat, b);
    assert_int_equal(base.exit_code, 0);
    assert_int_equal(bloat.exit_code, 0);
    double act = number_after(line_starting(base.out, "canary-train "), "activation_bytes=");
    double grew_kb = (double)(bloat.maxrss_kb - base.maxrss_kb);
    /* the kept copy is as large as the activations (~11 MiB here) */
    if (!(grew_kb * 1024.0 > 0.8 * act))
        fail_msg("peak RSS grew %.0f KiB, activations are %.0f KiB", grew_kb, act / 1024.0);
}

/* The extra work is sized from the model's own FLOP count, so it is the same real computation
 * on every machine. How much time it and the variants add is measured by bench/bench_canary,
 * never asserted here: CPU time on a shared machine is noise, not a test result. */
static void test_canary__extra_work_is_calibrated_to_model_flops(void **state)
{
    (void)state;
    static struct run r;
    const char *e[] = {"--device", "cpu", "--threads",    "1",   "--steps", "2", "--seq", "256",
                       "--batch",  "2",   "--extra-work", "200", NULL};
    run_canary(&r, e);
    assert_int_equal(r.exit_code, 0);
    const char *h = line_starting(r.out, "canary-train ");
    double ratio = number_after(h, "extra_flops=") / number_after(h, "step_flops=");
    assert_true(fabs(ratio - 2.0) < 0.01);
}

/* The FLOPs per token the canary prints for canary-gate's MFU, against a hand computation:
 * every matmul of a token costs 2 FLOPs per weight forward and 4 backward, so 6N with N the
 * matmul weights, N = L (3C^2 + C^2 + 4C^2 + 4C^2) + C V = 12 L C^2 + C V (qkv, proj, fc, fcproj
 * and the head; embeddings, biases and layernorms do no matmul); causal attention adds, per layer
 * and token, q.k and a.v products of C each over (T + 1) / 2 keys on average: 2 x 2 C (T + 1) / 2
 * forward, times 3 with backward: 6 L C (T + 1).
 * tiny (L 2, C 64, V 64, T 64): N = 12 x 2 x 4096 + 4096 = 102,400; 6N = 614,400; attention
 * 6 x 2 x 64 x 65 = 49,920; 664,320 in all.
 * small (L 6, C 512, V 1024, T 256): N = 12 x 6 x 262,144 + 524,288 = 19,398,656; 6N =
 * 116,391,936; attention 6 x 6 x 512 x 257 = 4,737,024; 121,128,960 in all. */
static void test_canary__prints_its_flops_per_token(void **state)
{
    (void)state;
    static struct run r;
    const char *tiny[] = {"--device", "cpu", "--steps", "1", "--preset", "tiny", NULL};
    run_canary(&r, tiny);
    assert_int_equal(r.exit_code, 0);
    const char *line = line_starting(r.out, "canary-gate flops_per_token: ");
    assert_non_null(line);
    assert_true(number_after(line, "flops_per_token: ") == 664320.0);
    static struct run s;
    const char *small[] = {"--device", "cpu", "--steps", "1", "--preset", "small", NULL};
    run_canary(&s, small);
    assert_int_equal(s.exit_code, 0);
    line = line_starting(s.out, "canary-gate flops_per_token: ");
    assert_non_null(line);
    assert_true(number_after(line, "flops_per_token: ") == 121128960.0);
}

/* Counts lines of text that equal line exactly. */
static int count_lines(const char *text, const char *line)
{
    int n = 0;
    size_t len = strlen(line);
    for (const char *p = text; p != NULL && *p != '\0'; p = strchr(p, '\n'), p = p ? p + 1 : p)
        if (strncmp(p, line, len) == 0 && (p[len] == '\n' || p[len] == '\0'))
            n++;
    return n;
}

/* Runs the canary with the NVTX probe and reads the ranges it saw into `ranges`; skips the test
 * when the probe was not built (no NVTX headers: the ranges compile to nothing). */
static void probe_ranges(struct run *r, const char **args, char *ranges, size_t cap)
{
    const char *probe = CG_BINARY_DIR "/canary/libcanary-nvtx-probe.so";
    if (access(probe, R_OK) != 0)
        skip();
    char path[] = "/tmp/test_canary_nvtx_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    setenv("NVTX_INJECTION64_PATH", probe, 1);
    setenv("CANARY_NVTX_PROBE_OUT", path, 1);
    run_canary(r, args);
    unsetenv("NVTX_INJECTION64_PATH");
    unsetenv("CANARY_NVTX_PROBE_OUT");
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    size_t n = fread(ranges, 1, cap - 1, f);
    ranges[n] = '\0';
    fclose(f);
    unlink(path);
    assert_int_equal(r->exit_code, 0);
}

static void test_canary__nvtx_steps_carry_tokens_and_nest_phases(void **state)
{
    (void)state;
    static struct run r;
    static char ranges[1 << 20];
    const char *args[] = {"--device",    "cpu",          "--steps", "3", "--variant",
                          "small-batch", "--extra-work", "10",      NULL};
    probe_ranges(&r, args, ranges, sizeof ranges);
    /* three steps, each a top-level range whose payload is the step's 4 x 64 tokens */
    assert_int_equal(count_lines(ranges, "step payload=256"), 3);
    /* inside: one forward and backward per micro-batch (small-batch: 4), then the optimizer */
    assert_int_equal(count_lines(ranges, "  forward"), 12);
    assert_int_equal(count_lines(ranges, "  backward"), 12);
    assert_int_equal(count_lines(ranges, "  optimizer"), 3);
    assert_int_equal(count_lines(ranges, "  extra-work"), 3);
    static const char *const kinds[] = {
        "embedding", "layernorm", "matmul", "attention", "gelu", "softmax-cross-entropy", "adamw"};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        char line[64];
        snprintf(line, sizeof line, "    %s", kinds[i]);
        if (count_lines(ranges, line) < 3)
            fail_msg("op range '%s' missing at depth 2:\n%.2000s", kinds[i], ranges);
    }
    /* nothing outside a step */
    for (const char *p = ranges; *p != '\0'; p = strchr(p, '\n') + 1)
        assert_true(p[0] == ' ' || strncmp(p, "step ", 5) == 0);
}

/* --extra-work-every 3 over 7 steps: the extra work runs in steps 3 and 6 only (a periodic
 * regression for bench/detect), and the header names the period. */
static void test_canary__extra_work_every_nth_step(void **state)
{
    (void)state;
    static struct run r;
    static char ranges[1 << 20];
    const char *args[] = {"--device",     "cpu", "--steps",            "7", "--extra-work",
                          "10",           "--extra-work-every",        "3", NULL};
    probe_ranges(&r, args, ranges, sizeof ranges);
    assert_int_equal(count_lines(ranges, "step payload=256"), 7);
    assert_int_equal(count_lines(ranges, "  extra-work"), 2);
    /* the third step's range list holds it, the first's does not */
    const char *s1 = strstr(ranges, "step payload=256");
    const char *s2 = strstr(s1 + 1, "step payload=256");
    const char *s3 = strstr(s2 + 1, "step payload=256");
    const char *s4 = strstr(s3 + 1, "step payload=256");
    const char *x = strstr(ranges, "  extra-work");
    assert_true(x > s3 && x < s4);
    assert_true(number_after(line_starting(r.out, "canary-train "), "extra_work_every=") == 3);
    static struct run bad;
    const char *zero[] = {"--device", "cpu", "--steps", "2", "--extra-work-every", "0", NULL};
    run_canary(&bad, zero);
    assert_int_equal(bad.exit_code, 2);
    assert_non_null(strstr(bad.err, "--extra-work-every"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_canary__loss_falls_in_50_steps),
        cmocka_unit_test(test_canary__gradcheck_covers_every_backward),
        cmocka_unit_test(test_canary__same_seed_same_losses),
        cmocka_unit_test(test_canary__nonfinite_loss_exits_5),
        cmocka_unit_test(test_canary__cuda_without_gpu_exits_4),
        cmocka_unit_test(test_canary__bad_options_exit_2),
        cmocka_unit_test(test_canary__variants_change_work_not_numbers),
        cmocka_unit_test(test_canary__mem_bloat_raises_peak_rss),
        cmocka_unit_test(test_canary__extra_work_is_calibrated_to_model_flops),
        cmocka_unit_test(test_canary__prints_its_flops_per_token),
        cmocka_unit_test(test_canary__nvtx_steps_carry_tokens_and_nest_phases),
        cmocka_unit_test(test_canary__extra_work_every_nth_step),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
