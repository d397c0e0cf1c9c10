/*
 * test_action: the GitHub Action and its example workflows, checked as files and run locally.
 *
 * Static checks (libyaml): action.yml and every example workflow are valid YAML with the keys
 * GitHub requires; every input the action declares is used and every input it uses is
 * declared; every output is written by the gate script; every script referenced exists and is
 * executable; every input a workflow passes to the action is one it declares.
 * End to end: ci/action-gate records a baseline and gates the built-in CPU canary with a
 * GITHUB_OUTPUT file as GitHub gives it, posts to the GitHub emulation on a pull request event,
 * and ci/baseline-publish / ci/baseline-fetch keep the newest K runs on a branch of a local
 * repository.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "artifact.h"
#include "httpd.h"
#include "proc.h"
#include "workdir.h"

#include <dirent.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

#define ACTION CG_SOURCE_DIR "/github-action/action.yml"
#define EXAMPLES CG_SOURCE_DIR "/github-action/examples"
#define TOKEN "ghs_actionTestToken42"

static struct cg_proc proc;

/* ---- YAML helpers --------------------------------------------------------------------------- */

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    static char text[1 << 17];
    size_t k = fread(text, 1, sizeof(text) - 1, f);
    text[k] = '\0';
    fclose(f);
    char *copy = strdup(text);
    assert_non_null(copy);
    return copy;
}

static void load_yaml(const char *path, yaml_document_t *doc)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    yaml_parser_t p;
    assert_true(yaml_parser_initialize(&p));
    yaml_parser_set_input_file(&p, f);
    int ok = yaml_parser_load(&p, doc);
    if (!ok)
        fprintf(stderr, "%s: YAML error at line %zu: %s\n", path, p.problem_mark.line + 1,
                p.problem ? p.problem : "?");
    assert_true(ok);
    assert_non_null(yaml_document_get_root_node(doc));
    yaml_parser_delete(&p);
    fclose(f);
}

static const char *scalar(const yaml_node_t *n)
{
    return n != NULL && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

static yaml_node_t *get(yaml_document_t *doc, yaml_node_t *map, const char *key)
{
    if (map == NULL || map->type != YAML_MAPPING_NODE)
        return NULL;
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
         p++) {
        const char *k = scalar(yaml_document_get_node(doc, p->key));
        if (k != NULL && strcmp(k, key) == 0)
            return yaml_document_get_node(doc, p->value);
    }
    return NULL;
}

static size_t seq_len(const yaml_node_t *n)
{
    return n != NULL && n->type == YAML_SEQUENCE_NODE
               ? (size_t)(n->data.sequence.items.top - n->data.sequence.items.start)
               : 0;
}

static yaml_node_t *seq_at(yaml_document_t *doc, yaml_node_t *n, size_t i)
{
    return yaml_document_get_node(doc, n->data.sequence.items.start[i]);
}

static bool executable(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

/* Every match of pattern's first group in text is passed to fn. */
static void each_match(const char *text, const char *pattern, void (*fn)(const char *, void *),
                       void *ctx)
{
    regex_t re;
    regmatch_t m[2];
    assert_int_equal(regcomp(&re, pattern, REG_EXTENDED), 0);
    for (const char *p = text; regexec(&re, p, 2, m, 0) == 0; p += m[0].rm_eo) {
        char word[128];
        int n = (int)(m[1].rm_eo - m[1].rm_so);
        snprintf(word, sizeof(word), "%.*s", n, p + m[1].rm_so);
        fn(word, ctx);
    }
    regfree(&re);
}

/* ---- action.yml ----------------------------------------------------------------------------- */

struct action_ctx {
    yaml_document_t *doc;
    yaml_node_t *inputs;
    const char *text;
    size_t used;
};

static void input_is_declared(const char *name, void *vctx)
{
    struct action_ctx *c = vctx;
    if (get(c->doc, c->inputs, name) == NULL)
        fail_msg("action.yml uses inputs.%s, which it does not declare", name);
    c->used++;
}

static void script_exists(const char *name, void *ctx)
{
    (void)ctx;
    char path[512];
    snprintf(path, sizeof(path), "%s/ci/%s", CG_SOURCE_DIR, name);
    if (!executable(path))
        fail_msg("'%s' is referenced but is not an executable file", path);
}

/* An INPUT_<NAME> variable ci/action-gate reads is set by the action's gate step. */
static void gate_variable_is_set(const char *name, void *vctx)
{
    const char *action = vctx;
    char set[160];
    snprintf(set, sizeof(set), "        INPUT_%s: ${{ ", name);
    if (strstr(action, set) == NULL)
        fail_msg("ci/action-gate reads INPUT_%s, which action.yml never sets", name);
}

static void test_action__is_complete_and_consistent(void **state)
{
    (void)state;
    yaml_document_t doc;
    load_yaml(ACTION, &doc);
    char *text = slurp(ACTION);
    char *gate_script = slurp(CG_SOURCE_DIR "/ci/action-gate");
    assert_non_null(text);
    assert_non_null(gate_script);
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    assert_non_null(scalar(get(&doc, root, "name")));
    assert_non_null(scalar(get(&doc, root, "description")));
    yaml_node_t *inputs = get(&doc, root, "inputs"), *outputs = get(&doc, root, "outputs");
    yaml_node_t *runs = get(&doc, root, "runs");
    assert_non_null(inputs);
    assert_non_null(outputs);
    assert_string_equal(scalar(get(&doc, runs, "using")), "composite");
    yaml_node_t *steps = get(&doc, runs, "steps");
    assert_true(seq_len(steps) >= 3);

    /* Declared inputs: described, and each used as inputs.<name>. */
    static const char *const required_inputs[] = {
        "baseline", "thresholds", "command", "runs", "steps", "comment-mode", "token",
        "fail-on-inconclusive", "gate-id", "tokens-per-step", "steps-from", "step-optimizer",
        "let-finish", "max-runs", "budget", "args", "shard-dir"};
    for (size_t i = 0; i < sizeof(required_inputs) / sizeof(required_inputs[0]); i++)
        assert_non_null(get(&doc, inputs, required_inputs[i]));
    for (yaml_node_pair_t *p = inputs->data.mapping.pairs.start; p < inputs->data.mapping.pairs.top;
         p++) {
        const char *name = scalar(yaml_document_get_node(&doc, p->key));
        yaml_node_t *in = yaml_document_get_node(&doc, p->value);
        assert_non_null(name);
        if (scalar(get(&doc, in, "description")) == NULL)
            fail_msg("input '%s' has no description", name);
        char use[128];
        snprintf(use, sizeof(use), "inputs.%s ", name);
        char use_end[128];
        snprintf(use_end, sizeof(use_end), "inputs.%s }}", name);
        if (strstr(text, use) == NULL && strstr(text, use_end) == NULL)
            fail_msg("input '%s' is declared but never used", name);
    }
    /* Used inputs are declared. */
    struct action_ctx c = {&doc, inputs, text, 0};
    each_match(text, "inputs\\.([a-z0-9-]+)", input_is_declared, &c);
    assert_true(c.used >= 9);
    /* What the gate script reads, the gate step sets. */
    each_match(gate_script, "INPUT_([A-Z_]+)", gate_variable_is_set, text);

    /* Outputs: each has a value from the gate step, and the gate script writes it; or from the
     * publish step, which writes it itself. */
    static const char *const required_outputs[] = {"verdict", "report-path", "artifact-path"};
    for (size_t i = 0; i < sizeof(required_outputs) / sizeof(required_outputs[0]); i++)
        assert_non_null(get(&doc, outputs, required_outputs[i]));
    for (yaml_node_pair_t *p = outputs->data.mapping.pairs.start;
         p < outputs->data.mapping.pairs.top; p++) {
        const char *name = scalar(yaml_document_get_node(&doc, p->key));
        const char *value = scalar(get(&doc, yaml_document_get_node(&doc, p->value), "value"));
        char want[128], written[128], published[128], by_publish[128];
        snprintf(want, sizeof(want), "steps.gate.outputs.%s }}", name);
        snprintf(written, sizeof(written), "\n%s=", name);
        snprintf(published, sizeof(published), "steps.publish.outputs.%s }}", name);
        snprintf(by_publish, sizeof(by_publish), "echo \"%s=", name);
        if (value != NULL && strstr(value, published) != NULL) {
            if (strstr(text, by_publish) == NULL)
                fail_msg("output '%s' is never written by the publish step", name);
            continue;
        }
        if (value == NULL || strstr(value, want) == NULL)
            fail_msg("output '%s' does not come from the gate step", name);
        if (strstr(gate_script, written) == NULL)
            fail_msg("output '%s' is never written by ci/action-gate", name);
    }

    /* Steps: a run step names its shell; ids are unique enough for the outputs' references. */
    bool have_gate = false;
    for (size_t i = 0; i < seq_len(steps); i++) {
        yaml_node_t *s = seq_at(&doc, steps, i);
        assert_true(get(&doc, s, "run") != NULL || get(&doc, s, "uses") != NULL);
        if (get(&doc, s, "run") != NULL)
            assert_non_null(scalar(get(&doc, s, "shell")));
        const char *id = scalar(get(&doc, s, "id"));
        if (id != NULL && strcmp(id, "gate") == 0)
            have_gate = true;
    }
    assert_true(have_gate);
    each_match(text, "/ci/([a-z0-9-]+)", script_exists, NULL);
    free(text);
    free(gate_script);
    yaml_document_delete(&doc);
}

/* ---- the example workflows ------------------------------------------------------------------ */

static void test_action__example_workflows_are_valid(void **state)
{
    (void)state;
    yaml_document_t action;
    load_yaml(ACTION, &action);
    yaml_node_t *declared = get(&action, yaml_document_get_root_node(&action), "inputs");
    DIR *d = opendir(EXAMPLES);
    assert_non_null(d);
    struct dirent *e;
    size_t n_files = 0, n_uses = 0, n_pinned = 0;
    bool have[4] = {false, false, false, false};
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (len < 5 || strcmp(e->d_name + len - 4, ".yml") != 0)
            continue;
        char path[512];
        snprintf(path, sizeof(path), "%s/%s", EXAMPLES, e->d_name);
        yaml_document_t doc;
        load_yaml(path, &doc);
        char *text = slurp(path);
        yaml_node_t *root = yaml_document_get_root_node(&doc);
        assert_non_null(scalar(get(&doc, root, "name")));
        yaml_node_t *on = get(&doc, root, "on");
        assert_non_null(on);
        have[0] |= get(&doc, on, "push") != NULL && get(&doc, on, "workflow_dispatch") != NULL;
        have[1] |= get(&doc, on, "pull_request") != NULL && strstr(text, "comment-mode: always");
        have[2] |= get(&doc, on, "workflow_run") != NULL;
        have[3] |= strstr(text, "baseline-branch:") != NULL && strstr(text, "accept:") != NULL &&
                   get(&doc, on, "push") != NULL;
        /* one line from another repository: no vendored copy, except the fork comment's
         * workflow_run, which builds the tool to post */
        if (get(&doc, on, "workflow_run") == NULL && strstr(text, "submodules") != NULL)
            fail_msg("%s vendors canary-gate as a submodule", path);
        yaml_node_t *jobs = get(&doc, root, "jobs");
        assert_non_null(jobs);
        assert_int_equal(jobs->type, YAML_MAPPING_NODE);
        for (yaml_node_pair_t *p = jobs->data.mapping.pairs.start; p < jobs->data.mapping.pairs.top;
             p++) {
            yaml_node_t *job = yaml_document_get_node(&doc, p->value);
            assert_non_null(get(&doc, job, "runs-on"));
            yaml_node_t *steps = get(&doc, job, "steps");
            assert_true(seq_len(steps) > 0);
            for (size_t i = 0; i < seq_len(steps); i++) {
                yaml_node_t *s = seq_at(&doc, steps, i);
                const char *uses = scalar(get(&doc, s, "uses"));
                assert_true(uses != NULL || get(&doc, s, "run") != NULL);
                if (uses == NULL || strstr(uses, "github-action") == NULL)
                    continue;
                n_uses++;
                yaml_node_t *with = get(&doc, s, "with");
                if (get(&doc, with, "baseline") == NULL && get(&doc, with, "base-command") == NULL &&
                    get(&doc, with, "baseline-branch") == NULL)
                    fail_msg("%s gives the action no baseline, baseline-branch or base-command",
                             path);
                if (strncmp(uses, "./", 2) == 0 || strstr(uses, "/github-action@") == NULL)
                    fail_msg("%s: '%s' is not the action used from its repository", path, uses);
                /* a ref that exists: the major tag v1 (docs/action.md), or a commit SHA */
                const char *ref = strstr(uses, "/github-action@") + strlen("/github-action@");
                if (strlen(ref) == 40 && strspn(ref, "0123456789abcdef") == 40)
                    n_pinned++;
                else if (strcmp(ref, "v1") != 0)
                    fail_msg("%s: '%s' is neither @v1 nor pinned by a commit SHA", path, uses);
                for (yaml_node_pair_t *w = with->data.mapping.pairs.start;
                     w < with->data.mapping.pairs.top; w++) {
                    const char *k = scalar(yaml_document_get_node(&doc, w->key));
                    if (get(&action, declared, k) == NULL)
                        fail_msg("%s passes '%s', which the action does not declare", path, k);
                }
            }
        }
        /* Scripts the workflows call through the vendored checkout exist and are executable. */
        each_match(text, "canary-gate/ci/([a-z0-9-]+)", script_exists, NULL);
        free(text);
        yaml_document_delete(&doc);
        n_files++;
    }
    closedir(d);
    yaml_document_delete(&action);
    assert_true(n_files >= 4);
    assert_true(n_uses >= 3);
    assert_true(n_pinned >= 1); /* an example shows pinning by commit SHA */
    for (int i = 0; i < 4; i++)
        if (!have[i])
            fail_msg("no example workflow covers case %d (main, pull request, fork comment, "
                     "accept path)", i);
}

/* ---- the scripts, end to end ---------------------------------------------------------------- */

/* Runs a script of ci/ in d with the given environment entries; returns its exit code. */
static int script(const struct cg_workdir *d, const char *name, const char *const *env,
                  const char *const *args)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/ci/%s", CG_SOURCE_DIR, name);
    return cg_workdir_run(d, path, env, args, &proc);
}

/* The value of name=... in a GITHUB_OUTPUT file (last one wins), or "". */
static const char *output(const struct cg_workdir *d, const char *file, const char *name)
{
    static char value[512];
    value[0] = '\0';
    char *text = slurp(cg_workdir_in(d, file));
    assert_non_null(text);
    size_t n = strlen(name);
    for (char *line = strtok(text, "\n"); line != NULL; line = strtok(NULL, "\n"))
        if (strncmp(line, name, n) == 0 && line[n] == '=')
            snprintf(value, sizeof(value), "%s", line + n + 1);
    free(text);
    return value;
}

static void test_action__gate_script_records_then_gates_the_builtin_canary(void **state)
{
    struct cg_workdir *d = *state;
    char gh_out[600];
    snprintf(gh_out, sizeof(gh_out), "GITHUB_OUTPUT=%s", cg_workdir_in(d, "out1"));
    const char *rec[] = {"CANARY_GATE_BIN=" CG_BINARY_DIR, gh_out, "INPUT_BASELINE=base/main.json",
                         "INPUT_RECORD_IF_MISSING=true", "INPUT_RUNS=2", "INPUT_STEPS=3",
                         "INPUT_WARMUP=1", "INPUT_OUTPUT_DIR=out", "GITHUB_EVENT_PATH=",
                         "GITHUB_STEP_SUMMARY=", NULL};
    assert_int_equal(mkdir(cg_workdir_in(d, "base"), 0755), 0);
    assert_int_equal(script(d, "action-gate", rec, NULL), 0);
    assert_string_equal(output(d, "out1", "verdict"), "pass");
    assert_string_equal(output(d, "out1", "exit-code"), "0");
    assert_string_equal(output(d, "out1", "artifact-path"), "out/canary-run.json");
    assert_true(access(cg_workdir_in(d, "base/main.json"), R_OK) == 0);
    assert_true(access(cg_workdir_in(d, "out/report.md"), R_OK) == 0);
    assert_true(access(cg_workdir_in(d, "out/canary-run.log"), R_OK) == 0);

    /* Two runs against the recorded baseline, below min_runs: pass or inconclusive (exit 4 asked),
     * never fail; the outputs agree with each other. */
    snprintf(gh_out, sizeof(gh_out), "GITHUB_OUTPUT=%s", cg_workdir_in(d, "out2"));
    const char *again[] = {"CANARY_GATE_BIN=" CG_BINARY_DIR, gh_out, "INPUT_BASELINE=base/main.json",
                           "INPUT_RUNS=2", "INPUT_OUTPUT_DIR=out", "INPUT_FAIL_ON_INCONCLUSIVE=true",
                           "GITHUB_EVENT_PATH=", "GITHUB_STEP_SUMMARY=", NULL};
    assert_int_equal(script(d, "action-gate", again, NULL), 0); /* the action exits later */
    const char *verdict = output(d, "out2", "verdict");
    if (strcmp(verdict, "pass") == 0)
        assert_string_equal(output(d, "out2", "exit-code"), "0");
    else if (strcmp(verdict, "inconclusive") == 0)
        assert_string_equal(output(d, "out2", "exit-code"), "4");
    else
        fail_msg("verdict '%s' with two runs a side", verdict);

    /* A bad input is refused by the script itself. */
    const char *bad[] = {"CANARY_GATE_BIN=" CG_BINARY_DIR, "INPUT_BASELINE=base/main.json",
                         "INPUT_RUNS=three", NULL};
    assert_int_equal(script(d, "action-gate", bad, NULL), 2);
    assert_non_null(strstr(proc.err, "input runs 'three'"));
}

/* The command input with a line break inside is refused with a clear message (it used to be cut
 * to its first line silently); a trailing line break (YAML's '>' and '|' styles add one) is
 * fine and every word of the line reaches the canary. */
static void test_action__command_with_a_line_break_is_refused(void **state)
{
    struct cg_workdir *d = *state;
    const char *two_lines[] = {"CANARY_GATE_BIN=" CG_BINARY_DIR, "INPUT_BASELINE=main.json",
                               "INPUT_RECORD_IF_MISSING=true", "INPUT_OUTPUT_DIR=out",
                               "INPUT_COMMAND=" CG_BINARY_DIR "/tests/canaries/nvtx-canary --steps 4\n"
                               "--step-ms 1",
                               "GITHUB_EVENT_PATH=", "GITHUB_STEP_SUMMARY=", NULL};
    assert_int_equal(script(d, "action-gate", two_lines, NULL), 2);
    assert_non_null(strstr(proc.err, "ci/action-gate: input command holds a line break"));
    assert_false(access(cg_workdir_in(d, "main.json"), F_OK) == 0); /* nothing ran */
    const char *base_lines[] = {"CANARY_GATE_BIN=" CG_BINARY_DIR, "INPUT_BASE_COMMAND=a\r\nb",
                                "INPUT_OUTPUT_DIR=out", NULL};
    assert_int_equal(script(d, "action-gate", base_lines, NULL), 2);
    assert_non_null(strstr(proc.err, "ci/action-gate: input base-command holds a line break"));

    char gh_out[600];
    snprintf(gh_out, sizeof(gh_out), "GITHUB_OUTPUT=%s", cg_workdir_in(d, "out1"));
    const char *trailing[] = {"CANARY_GATE_BIN=" CG_BINARY_DIR, gh_out, "INPUT_BASELINE=main.json",
                              "INPUT_RECORD_IF_MISSING=true", "INPUT_OUTPUT_DIR=out",
                              "INPUT_RUNS=1", "INPUT_STEPS=3", "INPUT_WARMUP=0",
                              "INPUT_COMMAND=" CG_BINARY_DIR "/tests/canaries/nvtx-canary --steps 3 "
                              "--step-ms 1\n",
                              "GITHUB_EVENT_PATH=", "GITHUB_STEP_SUMMARY=", NULL};
    assert_int_equal(script(d, "action-gate", trailing, NULL), 0);
    assert_string_equal(output(d, "out1", "exit-code"), "0");
    char *art = slurp(cg_workdir_in(d, "main.json"));
    assert_non_null(art);
    assert_non_null(strstr(art, "\"--step-ms\""));
    free(art);
}

/* A stand-in canary-gate in d/fake-bin that writes its arguments, one a line, to d/argv.txt. */
static char *fake_gate(const struct cg_workdir *d, char *env, size_t n)
{
    assert_int_equal(mkdir(cg_workdir_in(d, "fake-bin"), 0755), 0);
    FILE *f = fopen(cg_workdir_in(d, "fake-bin/canary-gate"), "w");
    assert_non_null(f);
    fprintf(f, "#!/bin/sh\nprintf '%%s\\n' \"$@\" >'%s'\n", cg_workdir_in(d, "argv.txt"));
    fclose(f);
    assert_int_equal(chmod(cg_workdir_in(d, "fake-bin/canary-gate"), 0755), 0);
    snprintf(env, n, "CANARY_GATE_BIN=%s", cg_workdir_in(d, "fake-bin"));
    return env;
}

/* The options a PyTorch team sets (tokens-per-step, steps-from, step-optimizer, let-finish,
 * max-runs, budget, args) reach the main command and canary-gate ab as options, before the
 * canary's command; args is split as command is (whitespace, no quotes, no shell); bad values,
 * a line break in args and a '--' word in it are refused before anything runs. Then for real: a
 * canary without tokens measured with tokens-per-step and let-finish. */
static void test_action__gate_script_takes_a_pytorch_teams_options(void **state)
{
    struct cg_workdir *d = *state;
    char bin[600];
    fake_gate(d, bin, sizeof(bin));
    const char *team[] = {bin, "INPUT_BASELINE=main.json", "INPUT_OUTPUT_DIR=out",
                          "INPUT_TOKENS_PER_STEP=8192", "INPUT_STEPS_FROM=optimizer",
                          "INPUT_STEP_OPTIMIZER=2", "INPUT_LET_FINISH=true",
                          "INPUT_SHARD_DIR=/shared/scratch/cg",
                          "INPUT_MAX_RUNS=30", "INPUT_BUDGET=600",
                          "INPUT_ARGS=--only timing,counts  --redact \"x y\"\n",
                          "INPUT_COMMAND=python3 train.py --lr 0.1", "GITHUB_EVENT_PATH=",
                          "GITHUB_STEP_SUMMARY=", NULL};
    assert_int_equal(script(d, "action-gate", team, NULL), 0);
    char *argv = slurp(cg_workdir_in(d, "argv.txt"));
    assert_non_null(argv);
    static const char *const want[] = {
        "\n--tokens-per-step\n8192\n", "\n--steps-from\noptimizer\n", "\n--step-optimizer\n2\n",
        "\n--shard-dir\n/shared/scratch/cg\n",
        "\n--let-finish\n", "\n--max-runs\n30\n", "\n--budget\n600\n",
        /* args, split on blanks (quotes are words' characters), then the canary's command */
        "\n--only\ntiming,counts\n--redact\n\"x\ny\"\n--\npython3\ntrain.py\n--lr\n0.1\n"};
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
        if (strstr(argv, want[i]) == NULL)
            fail_msg("'%s' not among the gate's arguments:\n%s", want[i], argv);
    assert_true(strncmp(argv, "--thresholds\n", strlen("--thresholds\n")) == 0); /* main command */
    free(argv);

    /* with base-command: the same options go to canary-gate ab */
    const char *ab[] = {bin, "INPUT_BASE_COMMAND=python3 base/train.py", "INPUT_OUTPUT_DIR=out",
                        "INPUT_TOKENS_PER_STEP=4096", "INPUT_MAX_RUNS=12", "INPUT_LET_FINISH=1",
                        "INPUT_ARGS=--only timing", "INPUT_COMMAND=python3 train.py",
                        "GITHUB_EVENT_PATH=", "GITHUB_STEP_SUMMARY=", NULL};
    assert_int_equal(script(d, "action-gate", ab, NULL), 0);
    argv = slurp(cg_workdir_in(d, "argv.txt"));
    assert_non_null(argv);
    const char *ab_head = "ab\n--base\npython3 base/train.py\n";
    assert_true(strncmp(argv, ab_head, strlen(ab_head)) == 0);
    assert_non_null(strstr(argv, "\n--tokens-per-step\n4096\n"));
    assert_non_null(strstr(argv, "\n--max-runs\n12\n"));
    assert_non_null(strstr(argv, "\n--let-finish\n"));
    assert_non_null(strstr(argv, "\n--only\ntiming\n--\npython3\ntrain.py\n"));
    assert_null(strstr(argv, "--steps-from")); /* empty inputs add nothing */
    assert_null(strstr(argv, "--budget"));
    free(argv);

    /* refused before anything runs */
    static const char *const bad[][2] = {
        {"INPUT_TOKENS_PER_STEP=8k", "input tokens-per-step '8k': expected a whole number"},
        {"INPUT_STEP_OPTIMIZER=-1", "input step-optimizer '-1': expected a whole number"},
        {"INPUT_MAX_RUNS=lots", "input max-runs 'lots'"},
        {"INPUT_BUDGET=10m", "input budget '10m'"},
        {"INPUT_STEPS_FROM=optimiser", "input steps-from 'optimiser': expected auto, nvtx or"},
        {"INPUT_ARGS=--only timing\n--no-confirm", "input args holds a line break"},
        {"INPUT_ARGS=--only timing -- python3 other.py", "input args holds '--'"},
        /* an option the action gives itself, from an input or for its own files: the input
         * names it (the gate's own line would name the action's 'default' as given) */
        {"INPUT_ARGS=--thresholds strict", "input args gives --thresholds, which the action "
                                           "already gives: set the input 'thresholds' instead"},
        {"INPUT_ARGS=--report=r.md", "input args gives --report, which the action already "
                                     "gives (for its own outputs): leave it out"},
        /* also abbreviated, as the tool's getopt_long takes it */
        {"INPUT_ARGS=--thresh strict", "input args gives --thresh (--thresholds), which the "
                                       "action already gives: set the input 'thresholds' instead"},
        {"INPUT_ARGS=--rep=x.md", "input args gives --rep (--report), which the action already "
                                  "gives (for its own outputs): leave it out"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(unlink(cg_workdir_in(d, "argv.txt")), 0);
        const char *env[] = {bin, "INPUT_BASELINE=main.json", "INPUT_OUTPUT_DIR=out", bad[i][0],
                             NULL};
        assert_int_equal(script(d, "action-gate", env, NULL), 2);
        if (strstr(proc.err, bad[i][1]) == NULL)
            fail_msg("%s: expected '%s' in:\n%s", bad[i][0], bad[i][1], proc.err);
        assert_false(access(cg_workdir_in(d, "argv.txt"), F_OK) == 0); /* the gate never ran */
        /* the next case needs a file to remove */
        FILE *f = fopen(cg_workdir_in(d, "argv.txt"), "w");
        assert_non_null(f);
        fclose(f);
    }

    /* a whole option name that begins a longer one the action gives is that option, as for
     * the tool (--steps beside the steps-from input) */
    const char *steps[] = {bin,
                           "INPUT_BASELINE=main.json",
                           "INPUT_OUTPUT_DIR=out",
                           "INPUT_STEPS_FROM=nvtx",
                           "INPUT_ARGS=--steps 20",
                           NULL};
    assert_int_equal(script(d, "action-gate", steps, NULL), 0);
    argv = slurp(cg_workdir_in(d, "argv.txt"));
    assert_non_null(argv);
    assert_non_null(strstr(argv, "\n--steps-from\nnvtx\n"));
    assert_non_null(strstr(argv, "\n--steps\n20\n"));
    free(argv);

    /* for real: a canary whose steps carry no tokens, 3 steps after 1, left to finish its 6 */
    char gh_out[600];
    snprintf(gh_out, sizeof(gh_out), "GITHUB_OUTPUT=%s", cg_workdir_in(d, "out1"));
    const char *real[] = {"CANARY_GATE_BIN=" CG_BINARY_DIR, gh_out, "INPUT_BASELINE=main.json",
                          "INPUT_RECORD_IF_MISSING=true", "INPUT_OUTPUT_DIR=out", "INPUT_RUNS=1",
                          "INPUT_STEPS=3", "INPUT_WARMUP=1", "INPUT_TOKENS_PER_STEP=8192",
                          "INPUT_LET_FINISH=true", "INPUT_STEPS_FROM=nvtx",
                          "INPUT_COMMAND=" CG_BINARY_DIR "/tests/canaries/nvtx-canary --steps 6 "
                          "--step-ms 1",
                          "GITHUB_EVENT_PATH=", "GITHUB_STEP_SUMMARY=", NULL};
    assert_int_equal(script(d, "action-gate", real, NULL), 0);
    assert_string_equal(output(d, "out1", "exit-code"), "0");
    struct cg_artifact a;
    struct cg_err err;
    cg_artifact_init(&a);
    cg_err_init(&err);
    assert_int_equal(cg_artifact_load(cg_workdir_in(d, "main.json"), &a, &err), 0);
    assert_int_equal(a.settings.tokens_per_step, 8192);
    assert_string_equal(a.settings.steps_from, "nvtx");
    assert_int_equal(a.n_runs, 1);
    assert_int_equal(a.runs[0].n_steps, 3);
    assert_int_equal(a.runs[0].steps[0].tokens, 8192);
    assert_true(a.runs[0].stopped_after_steps < 0); /* it finished by itself */
    cg_artifact_release(&a);
}

/* ci/action-gate reads a word of args as getopt_long does: the whole name, or a beginning of an
 * option's name unless that is another option's whole name (--steps is not --steps-from). Its
 * list of such whole names is the tool's: the options of the main command and of ab whose name
 * begins a longer one's, as their --help names them. */
static void test_action__gate_scripts_whole_option_names_are_the_tools(void **state)
{
    struct cg_workdir *d = *state;
    char *text = slurp(CG_SOURCE_DIR "/ci/action-gate");
    assert_non_null(text);
    const char *line = strstr(text, "\nwhole_names=\"");
    assert_non_null(line);
    char known[256];
    snprintf(known, sizeof(known), "%.*s", (int)strcspn(line + 1, "\n"), line + 1);
    free(text);
    for (int c = 0; c < 2; c++) {
        const char *help_args[] = {c == 0 ? "gate" : "ab", "--help", NULL};
        assert_int_equal(cg_workdir_run(d, CG_TOOL_PATH, NULL, help_args, &proc), 0);
        char names[128][32]; /* every --name the help writes (some only in another's line) */
        size_t n = 0;
        for (const char *p = strstr(proc.out, "--"); p != NULL && n < 128; p = strstr(p + 2, "--"))
            if (p[2] >= 'a' && p[2] <= 'z')
                snprintf(names[n++], sizeof(names[0]), "%.*s",
                         (int)strspn(p, "-abcdefghijklmnopqrstuvwxyz"), p);
        assert_true(n > 20);
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; j < n; j++) {
                size_t len = strlen(names[i]);
                char word[40];
                snprintf(word, sizeof(word), " %s ", names[i]);
                if (i != j && strncmp(names[j], names[i], len) == 0 && names[j][len] != '\0' &&
                    strstr(known, word) == NULL)
                    fail_msg("%s begins %s (%s), not in ci/action-gate's %s", names[i], names[j],
                             help_args[0], known);
            }
    }
}

/* A fake GitHub for pull request 12 of o/r and its event file in d; *event and *api get the
 * GITHUB_EVENT_PATH= and GITHUB_API_URL= entries. */
static struct cg_httpd *pull_request_12(const struct cg_workdir *d, char *event, size_t n_event,
                                        char *api, size_t n_api)
{
    struct cg_httpd *srv = cg_httpd_start();
    assert_non_null(srv);
    cg_httpd_github(srv, "o/r", 12, TOKEN, 100);
    FILE *f = fopen(cg_workdir_in(d, "event.json"), "w");
    assert_non_null(f);
    fputs("{\"pull_request\": {\"number\": 12, \"head\": {\"sha\": "
          "\"89abcdef0123456789abcdef0123456789abcdef\"}}}",
          f);
    fclose(f);
    snprintf(event, n_event, "GITHUB_EVENT_PATH=%s", cg_workdir_in(d, "event.json"));
    snprintf(api, n_api, "GITHUB_API_URL=%s", cg_httpd_url(srv));
    return srv;
}

static void test_action__gate_script_comments_on_a_pull_request(void **state)
{
    struct cg_workdir *d = *state;
    char event[600], api[128];
    struct cg_httpd *srv = pull_request_12(d, event, sizeof(event), api, sizeof(api));
    char gh_out[600], summary[600];
    snprintf(gh_out, sizeof(gh_out), "GITHUB_OUTPUT=%s", cg_workdir_in(d, "out"));
    snprintf(summary, sizeof(summary), "GITHUB_STEP_SUMMARY=%s", cg_workdir_in(d, "summary.md"));
    const char *env[] = {"CANARY_GATE_BIN=" CG_BINARY_DIR, gh_out, event, summary, api,
                         "GITHUB_TOKEN=" TOKEN, "GITHUB_REPOSITORY=o/r",
                         "INPUT_BASELINE=main.json", "INPUT_RECORD_IF_MISSING=true",
                         "INPUT_RUNS=1", "INPUT_STEPS=2", "INPUT_WARMUP=0",
                         "INPUT_COMMENT_MODE=always", "INPUT_STATUS=true", "INPUT_GATE_ID=cpu",
                         "INPUT_CHECK_RUN=true", NULL};
    assert_int_equal(script(d, "action-gate", env, NULL), 0);
    assert_string_equal(output(d, "out", "verdict"), "pass");
    /* the check run on the head: a recorded baseline compared nothing, so neutral */
    assert_int_equal(cg_httpd_check_run_count(srv), 1);
    char *check = cg_httpd_check_run(srv, 0, NULL);
    assert_non_null(check);
    assert_non_null(strstr(check, "\"name\":\"canary-gate/cpu\""));
    assert_non_null(strstr(check, "\"head_sha\":\"89abcdef0123456789abcdef0123456789abcdef\""));
    assert_non_null(strstr(check, "\"conclusion\":\"neutral\""));
    free(check);
    assert_int_equal(cg_httpd_comment_count(srv), 1);
    char *body = cg_httpd_comment(srv, 0, NULL);
    assert_non_null(body);
    assert_non_null(strstr(body, "<!-- canary-gate:cpu -->"));
    assert_non_null(strstr(body, "baseline recorded"));
    free(body);
    assert_int_equal(cg_httpd_status_count(srv), 1);
    assert_null(strstr(proc.out, TOKEN));
    assert_null(strstr(proc.err, TOKEN));
    cg_httpd_stop(srv);
}

/* With base-command the step measures base and head turn about ('canary-gate ab') and posts the
 * report with 'canary-gate comment'; no baseline is needed. Without either it refuses. */
static void test_action__gate_script_measures_the_base_beside_the_head(void **state)
{
    struct cg_workdir *d = *state;
    char event[600], api[128];
    struct cg_httpd *srv = pull_request_12(d, event, sizeof(event), api, sizeof(api));
    char gh_out[600];
    snprintf(gh_out, sizeof(gh_out), "GITHUB_OUTPUT=%s", cg_workdir_in(d, "out"));
    const char *env[] = {"CANARY_GATE_BIN=" CG_BINARY_DIR, gh_out, event, api,
                         "GITHUB_TOKEN=" TOKEN, "GITHUB_REPOSITORY=o/r", "GITHUB_STEP_SUMMARY=",
                         "INPUT_BASE_COMMAND=" CG_BINARY_DIR "/canary-train --preset tiny --steps 3",
                         "INPUT_RUNS=2", "INPUT_STEPS=2", "INPUT_WARMUP=1", "INPUT_OUTPUT_DIR=ab",
                         "INPUT_COMMENT_MODE=always", "INPUT_STATUS=true", "INPUT_GATE_ID=cpu",
                         "INPUT_CHECK_RUN=false", NULL};
    assert_int_equal(script(d, "action-gate", env, NULL), 0);
    assert_int_equal(cg_httpd_check_run_count(srv), 0); /* check-run 'false' */
    /* two pairs are too few for a FAIL: pass or inconclusive, both exit 0 */
    const char *verdict = output(d, "out", "verdict");
    if (strcmp(verdict, "pass") != 0 && strcmp(verdict, "inconclusive") != 0)
        fail_msg("verdict '%s' with two pairs", verdict);
    assert_string_equal(output(d, "out", "exit-code"), "0");
    assert_string_equal(output(d, "out", "artifact-path"), "ab/canary-run.json");
    struct cg_artifact base, head;
    struct cg_err err;
    assert_int_equal(cg_artifact_load(cg_workdir_in(d, "ab/canary-base.json"), &base, &err), 0);
    assert_int_equal(cg_artifact_load(cg_workdir_in(d, "ab/canary-run.json"), &head, &err), 0);
    /* 2 pairs, and 2 more while inconclusive (up to 2 x the first look's) */
    assert_true(base.n_runs == 2 || base.n_runs == 4);
    assert_int_equal(head.n_runs, base.n_runs);
    assert_string_equal(base.env.canary_command[0], CG_BINARY_DIR "/canary-train");
    cg_artifact_release(&base);
    cg_artifact_release(&head);
    assert_int_equal(cg_httpd_comment_count(srv), 1);
    char *body = cg_httpd_comment(srv, 0, NULL);
    assert_non_null(body);
    assert_non_null(strstr(body, "<!-- canary-gate:cpu -->"));
    assert_non_null(strstr(body, "turn about"));
    free(body);
    assert_int_equal(cg_httpd_status_count(srv), 1);
    assert_null(strstr(proc.out, TOKEN));
    assert_null(strstr(proc.err, TOKEN));
    cg_httpd_stop(srv);

    /* Neither a baseline nor a base command: refused, one line naming the input. */
    const char *none[] = {"CANARY_GATE_BIN=" CG_BINARY_DIR, "INPUT_BASELINE=", NULL};
    assert_int_equal(script(d, "action-gate", none, NULL), 2);
    assert_non_null(strstr(proc.err, "input baseline is empty"));
}

static void git(const struct cg_workdir *d, const char *cwd, const char *a1, const char *a2,
                const char *a3, const char *a4)
{
    const char *argv[] = {"/usr/bin/git", a1, a2, a3, a4, NULL};
    const char *env[] = {"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
                         "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", NULL};
    assert_int_equal(cg_proc_run(cg_workdir_in(d, cwd), argv, env, &proc), 0);
    if (proc.exit_code != 0)
        fail_msg("git %s %s: %s", a1, a2 ? a2 : "", proc.err);
}

static size_t runs_in(const char *path)
{
    struct cg_artifact a;
    struct cg_err err;
    cg_artifact_init(&a);
    assert_int_equal(cg_artifact_load(path, &a, &err), 0);
    size_t n = a.n_runs;
    cg_artifact_release(&a);
    return n;
}

/* How many times needle occurs in text. */
static size_t occurrences(const char *text, const char *needle)
{
    size_t n = 0;
    for (const char *p = strstr(text, needle); p != NULL; p = strstr(p + 1, needle))
        n++;
    return n;
}

/* The environment of the baseline scripts in the tests: the tool built here, a committer. */
static const char *const publish_env[] = {
    "CANARY_GATE_BIN=" CG_BINARY_DIR,    "GIT_AUTHOR_NAME=t",
    "GIT_AUTHOR_EMAIL=t@example.com",    "GIT_COMMITTER_NAME=t",
    "GIT_COMMITTER_EMAIL=t@example.com", NULL};

/* A run of the built-in canary into out (under d), of runs runs of steps steps, no warm-up. */
static void builtin_run(const struct cg_workdir *d, const char *out, const char *runs,
                        const char *steps)
{
    const char *args[] = {CG_TOOL_PATH, "run", "--out",    out, "--runs", runs,
                          "--steps",    steps, "--warmup", "0", NULL};
    assert_int_equal(cg_proc_run(d->path, args, NULL, &proc), 0);
    assert_int_equal(proc.exit_code, 0);
}

/* A bare repository origin.git and a checkout ws of one commit with it as its remote origin. */
static void checkout_with_remote(const struct cg_workdir *d)
{
    assert_int_equal(mkdir(cg_workdir_in(d, "origin.git"), 0755), 0);
    assert_int_equal(mkdir(cg_workdir_in(d, "ws"), 0755), 0);
    git(d, "origin.git", "init", "-q", "--bare", NULL);
    git(d, "ws", "init", "-q", NULL, NULL);
    git(d, "ws", "remote", "add", "origin", cg_workdir_in(d, "origin.git"));
    git(d, "ws", "commit", "-q", "--allow-empty", "-mstart");
}

/* Fails when the checkout ws has a branch of the gate's (the baseline's or a publish's). */
static void no_gate_branch(const struct cg_workdir *d)
{
    git(d, "ws", "branch", "--list", NULL, NULL);
    if (strstr(proc.out, "canary-gate") != NULL)
        fail_msg("a branch was left in the checkout:\n%s", proc.out);
}

static void test_action__baseline_branch_keeps_the_newest_k(void **state)
{
    struct cg_workdir *d = *state;
    if (!executable("/usr/bin/git"))
        skip();
    checkout_with_remote(d);

    /* Runs of the built-in canary, of 1, 2 and 2 runs, as three main-branch results. */
    builtin_run(d, "ws/r1.json", "1", "2");
    builtin_run(d, "ws/r2.json", "2", "2");
    /* a third result of 2 runs (a run may be pooled only once: r2 again would not do) */
    builtin_run(d, "ws/r3.json", "2", "2");

    struct cg_workdir ws;
    snprintf(ws.path, sizeof(ws.path), "%s", cg_workdir_in(d, "ws"));
    const char *const *env = publish_env;
    /* Nothing published yet: fetch leaves the directory empty and succeeds. */
    const char *fetch0[] = {"bl0", NULL};
    assert_int_equal(script(&ws, "baseline-fetch", env, fetch0), 0);
    assert_true(access(cg_workdir_in(&ws, "bl0/baseline.json"), F_OK) != 0);

    const char *p1[] = {"r1.json", "--keep", "2", "--label", "20260101T000000Z-a", NULL};
    const char *p2[] = {"r2.json", "--keep", "2", "--label", "20260102T000000Z-b", NULL};
    /* the third is published by hand, accepted, with the history's site */
    const char *p3[] = {"r3.json",
                        "--keep",
                        "2",
                        "--label",
                        "20260103T000000Z-c",
                        "--commit",
                        "abc1234",
                        "--accept",
                        "fused optimizer: +3% step time for -20% memory",
                        "--accept-who",
                        "octocat",
                        "--site",
                        "site",
                        NULL};
    assert_int_equal(script(&ws, "baseline-publish", env, p1), 0);
    assert_int_equal(script(&ws, "baseline-publish", env, p2), 0);
    const char *fetch1[] = {"bl1", NULL};
    assert_int_equal(script(&ws, "baseline-fetch", env, fetch1), 0);
    assert_int_equal(runs_in(cg_workdir_in(&ws, "bl1/baseline.json")), 3); /* 1 + 2 runs pooled */

    assert_int_equal(script(&ws, "baseline-publish", env, p3), 0);
    const char *fetch2[] = {"bl2", NULL};
    assert_int_equal(script(&ws, "baseline-fetch", env, fetch2), 0);
    assert_int_equal(runs_in(cg_workdir_in(&ws, "bl2/baseline.json")), 4); /* the newest 2: 2 + 2 */
    assert_true(access(cg_workdir_in(&ws, "bl2/runs/20260101T000000Z-a.json"), F_OK) != 0);
    assert_true(access(cg_workdir_in(&ws, "bl2/runs/20260103T000000Z-c.json"), F_OK) == 0);

    /* The history holds one line per published run, the newest commit as given. */
    char *hist = slurp(cg_workdir_in(&ws, "bl2/history.jsonl"));
    assert_non_null(hist);
    assert_int_equal(occurrences(hist, "\"type\":\"run\""), 3);
    assert_int_equal(occurrences(hist, "\n"), 4); /* and the accept */
    assert_non_null(strstr(hist, "\"commit\":\"abc1234\""));
    /* the accept: one event, who, why and the commit, just before the accepted run */
    assert_int_equal(occurrences(hist, "\"type\":\"event\""), 1);
    const char *acc = strstr(hist, "{\"schema\":1,\"type\":\"event\",\"event\":\"accept\","
                                   "\"commit\":\"abc1234\",");
    assert_non_null(acc);
    assert_non_null(strstr(acc, "\"reason\":\"fused optimizer: +3% step time for -20% memory\","
                                "\"who\":\"octocat\"}\n{\"schema\":1,\"type\":\"run\","
                                "\"commit\":\"abc1234\""));
    /* the site: one chart per metric the runs have, one point per published run, the accept */
    char *page = slurp(cg_workdir_in(&ws, "site/index.html"));
    assert_non_null(page);
    const char *mean = strstr(page, "<svg class=\"cg-chart\" data-metric=\"step_time_mean\"");
    assert_non_null(mean);
    size_t points = 0;
    for (const char *q = strstr(mean, "<circle class=\"cg-point\"");
         q && q < strstr(mean, "</svg>"); q = strstr(q + 1, "<circle class=\"cg-point\""))
        points++;
    assert_int_equal(points, 3);
    assert_int_equal(occurrences(page, "<svg class=\"cg-chart\""), occurrences(page, "</svg>"));
    assert_true(occurrences(page, "<svg class=\"cg-chart\"") >= 4); /* time, floor, p95, host */
    assert_int_equal(occurrences(page, "<g class=\"cg-accept\">"),
                     occurrences(page, "<svg class=\"cg-chart\""));
    assert_non_null(strstr(page, "accepted at abc1234 by octocat"));
    free(page);
    /* the next pull request's gate, given the fetched history, mentions the accept */
    static char gh_out[600];
    snprintf(gh_out, sizeof(gh_out), "GITHUB_OUTPUT=%s", cg_workdir_in(&ws, "gh-out-pr"));
    const char *pr[] = {"CANARY_GATE_BIN=" CG_BINARY_DIR,
                        gh_out,
                        "INPUT_BASELINE=bl2/baseline.json",
                        "INPUT_HISTORY=bl2/history.jsonl",
                        "INPUT_RUNS=2",
                        "INPUT_OUTPUT_DIR=out-pr",
                        "GITHUB_EVENT_PATH=",
                        "GITHUB_STEP_SUMMARY=",
                        NULL};
    if (script(&ws, "action-gate", pr, NULL) != 0)
        fail_msg("action-gate failed:\n%s", proc.err);
    char *report = slurp(cg_workdir_in(&ws, "out-pr/report.md"));
    assert_non_null(report);
    if (strstr(report, "> **Baseline accepted** at abc1234 by octocat (") == NULL ||
        strstr(report, "fused optimizer&#58; +3% step time for -20% memory") == NULL)
        fail_msg("the PR report does not mention the accept:\n%.3000s", report);
    free(report);
    /* A run of another canary (more steps) restarts the pool: an event in the history. */
    builtin_run(d, "ws/r4.json", "1", "3");
    const char *p4[] = {"r4.json", "--keep", "2", "--label", "20260104T000000Z-d", NULL};
    static char summary_env[600];
    snprintf(summary_env, sizeof(summary_env), "GITHUB_STEP_SUMMARY=%s",
             cg_workdir_in(&ws, "summary.md"));
    const char *env_summary[] = {env[0], env[1], env[2], env[3], env[4], summary_env, NULL};
    assert_int_equal(script(&ws, "baseline-publish", env_summary, p4), 0);
    /* the job summary gets the history check (4 runs in 2 segments: nothing to find) */
    char *summary = slurp(cg_workdir_in(&ws, "summary.md"));
    assert_non_null(summary);
    if (strstr(summary, "## canary-gate: main's history") == NULL ||
        strstr(summary, "4 runs of <code>history.jsonl</code> in 2 environment segments: no "
                        "change point") == NULL)
        fail_msg("no history check in the job summary:\n%s", summary);
    free(summary);
    const char *fetch4[] = {"bl4", NULL};
    assert_int_equal(script(&ws, "baseline-fetch", env, fetch4), 0);
    assert_int_equal(runs_in(cg_workdir_in(&ws, "bl4/baseline.json")), 1);
    free(hist);
    hist = slurp(cg_workdir_in(&ws, "bl4/history.jsonl"));
    assert_non_null(hist);
    assert_int_equal(occurrences(hist, "\"type\":\"run\""), 4);
    assert_int_equal(occurrences(hist, "\"event\":\"environment\""), 1); /* 3 steps, not 2 */
    assert_int_equal(occurrences(hist, "\"event\":\"restart\""), 1);
    free(hist);

    /* A broken run is refused before anything changes. */
    FILE *f = fopen(cg_workdir_in(&ws, "bad.json"), "w");
    assert_non_null(f);
    fputs("{}", f);
    fclose(f);
    const char *bad[] = {"bad.json", NULL};
    assert_int_equal(script(&ws, "baseline-publish", env, bad), 2);
    /* So is an accept whose reason is not one line (it would lose the run's history line). */
    const char *two_lines[] = {"r4.json", "--accept", "two\nlines", NULL};
    assert_int_equal(script(&ws, "baseline-publish", env, two_lines), 2);
    assert_non_null(strstr(proc.err, "--accept: expected one line"));
    const char *fetch3[] = {"bl3", NULL};
    assert_int_equal(script(&ws, "baseline-fetch", env, fetch3), 0);
    assert_int_equal(runs_in(cg_workdir_in(&ws, "bl3/baseline.json")), 1);
}

/* Two gates (gate ids) publishing to one baseline branch: each keeps its own runs and baseline.
 * They shared runs/ and baseline.json, so the second gate's canary restarted the pool (deleting
 * the first gate's runs) and the first gate's next pull request was gated against the second's
 * canary: a +22% regression read -7%, PASS. */
static void test_action__two_gates_keep_their_own_baselines(void **state)
{
    struct cg_workdir *d = *state;
    if (!executable("/usr/bin/git"))
        skip();
    checkout_with_remote(d);
    builtin_run(d, "ws/a.json", "2", "2");
    builtin_run(d, "ws/b.json", "1", "3");
    struct cg_workdir ws;
    snprintf(ws.path, sizeof(ws.path), "%s", cg_workdir_in(d, "ws"));
    const char *const *env = publish_env;
    const char *pa[] = {"a.json", "--gate-id", "h100", "--label", "20260101T000000Z-a", NULL};
    const char *pb[] = {"b.json", "--gate-id", "a100", "--label", "20260102T000000Z-b", NULL};
    assert_int_equal(script(&ws, "baseline-publish", env, pa), 0);
    assert_int_equal(script(&ws, "baseline-publish", env, pb), 0);
    assert_null(strstr(proc.err, "restarts"));
    const char *fa[] = {"bla", "canary-gate-baseline", "origin", "--gate-id", "h100", NULL};
    const char *fb[] = {"blb", "canary-gate-baseline", "origin", "--gate-id", "a100", NULL};
    assert_int_equal(script(&ws, "baseline-fetch", env, fa), 0);
    assert_int_equal(script(&ws, "baseline-fetch", env, fb), 0);
    assert_int_equal(runs_in(cg_workdir_in(&ws, "bla/baseline.json")), 2);
    assert_int_equal(runs_in(cg_workdir_in(&ws, "blb/baseline.json")), 1);
    /* one history for both, each run under its gate */
    char *hist = slurp(cg_workdir_in(&ws, "bla/history.jsonl"));
    assert_non_null(hist);
    assert_int_equal(occurrences(hist, "\"type\":\"run\""), 2);
    assert_int_equal(occurrences(hist, "\"event\":\"restart\""), 0);
    free(hist);
    /* a gate id that is no plain name is refused before anything is written */
    const char *bad[] = {"a.json", "--gate-id", "../x", NULL};
    assert_int_equal(script(&ws, "baseline-publish", env, bad), 2);
    assert_non_null(strstr(proc.err, "--gate-id '../x'"));
}

/* A gate's first publish with --accept, into a history of another gate's runs: the run is
 * published and the accept recorded, after the run (before it, no run of the gate would meet
 * it: 'canary-gate accept' refuses that). The accept was refused and lost with only a warning. */
static void test_action__a_gates_first_publish_records_its_accept(void **state)
{
    struct cg_workdir *d = *state;
    if (!executable("/usr/bin/git"))
        skip();
    checkout_with_remote(d);
    builtin_run(d, "ws/a.json", "1", "2");
    builtin_run(d, "ws/b.json", "1", "2");
    builtin_run(d, "ws/c.json", "1", "2");
    struct cg_workdir ws;
    snprintf(ws.path, sizeof(ws.path), "%s", cg_workdir_in(d, "ws"));
    const char *const *env = publish_env;
    const char *pa[] = {"a.json", "--gate-id", "h100", "--label", "20260101T000000Z-a", NULL};
    const char *pb[] = {"b.json",   "--gate-id", "a100",     "--label",    "20260102T000000Z-b",
                        "--commit", "abc1234",   "--accept", "new runner", "--accept-who",
                        "octocat",  NULL};
    const char *pc[] = {"c.json",   "--gate-id", "a100",     "--label",       "20260103T000000Z-c",
                        "--commit", "def5678",   "--accept", "fused kernels", NULL};
    assert_int_equal(script(&ws, "baseline-publish", env, pa), 0);
    if (script(&ws, "baseline-publish", env, pb) != 0 || strstr(proc.err, "warning") != NULL ||
        strstr(proc.err, "history.jsonl had no run of gate 'a100' yet") == NULL)
        fail_msg("a gate's first publish with --accept said:\n%s", proc.err);
    assert_int_equal(script(&ws, "baseline-publish", env, pc), 0); /* the next: before the run */
    assert_null(strstr(proc.err, "warning"));
    const char *fetch[] = {"bl", "canary-gate-baseline", "origin", "--gate-id", "a100", NULL};
    assert_int_equal(script(&ws, "baseline-fetch", env, fetch), 0);
    assert_int_equal(runs_in(cg_workdir_in(&ws, "bl/baseline.json")), 2);
    char *hist = slurp(cg_workdir_in(&ws, "bl/history.jsonl"));
    assert_non_null(hist);
    assert_int_equal(occurrences(hist, "\"type\":\"run\""), 3);
    assert_int_equal(occurrences(hist, "\"event\":\"accept\""), 2);
    const char *first = strstr(hist, "{\"schema\":1,\"type\":\"run\",\"commit\":\"abc1234\"");
    const char *acc = strstr(hist, "{\"schema\":1,\"type\":\"event\",\"event\":\"accept\","
                                   "\"commit\":\"abc1234\",");
    const char *next = strstr(hist, "\"event\":\"accept\",\"commit\":\"def5678\",");
    const char *next_run = strstr(hist, "{\"schema\":1,\"type\":\"run\",\"commit\":\"def5678\"");
    if (first == NULL || acc == NULL || acc < first || next == NULL || next_run == NULL ||
        next > next_run ||
        strstr(acc, "\"gate_id\":\"a100\",\"reason\":\"new runner\","
                    "\"who\":\"octocat\"}") == NULL)
        fail_msg("the accepts are not where they belong:\n%s", hist);
    free(hist);
}

/* --history-keep N reaches the history check and the site: with N past their default (1000), a
 * gate's 1006 runs are all checked and drawn. They read the newest 1000 ("6 older runs were left
 * out (--keep)", the site's "6 older runs folded into a summary"). */
static void test_action__history_keep_reaches_the_check_and_the_site(void **state)
{
    struct cg_workdir *d = *state;
    if (!executable("/usr/bin/git"))
        skip();
    checkout_with_remote(d);
    builtin_run(d, "ws/a.json", "1", "2");
    builtin_run(d, "ws/b.json", "1", "2");
    struct cg_workdir ws;
    snprintf(ws.path, sizeof(ws.path), "%s", cg_workdir_in(d, "ws"));
    const char *const *env = publish_env;
    const char *pa[] = {"a.json",  "--gate-id",          "h100", "--history-keep", "2000",
                        "--label", "20260101T000000Z-a", NULL};
    assert_int_equal(script(&ws, "baseline-publish", env, pa), 0);
    /* the branch's history made 1005 runs long: the run's line under 1005 commits */
    git(d, ".", "clone", "-q", cg_workdir_in(d, "origin.git"), "edit");
    git(d, "edit", "checkout", "-q", "canary-gate-baseline", NULL);
    char *line = slurp(cg_workdir_in(d, "edit/history.jsonl"));
    assert_non_null(line);
    const char *at = strstr(line, "\"commit\":\"");
    assert_non_null(at);
    at += strlen("\"commit\":\"");
    const char *rest = strchr(at, '"');
    assert_non_null(rest);
    FILE *f = fopen(cg_workdir_in(d, "edit/history.jsonl"), "w");
    assert_non_null(f);
    for (int i = 0; i < 1005; i++)
        fprintf(f, "%.*sc%04d%s", (int)(at - line), line, i, rest);
    assert_int_equal(fclose(f), 0);
    free(line);
    git(d, "edit", "commit", "-qam", "1005 runs", NULL);
    git(d, "edit", "push", "-q", "origin", "canary-gate-baseline");

    static char summary_env[600];
    snprintf(summary_env, sizeof(summary_env), "GITHUB_STEP_SUMMARY=%s",
             cg_workdir_in(&ws, "summary.md"));
    const char *env_summary[] = {env[0], env[1], env[2], env[3], env[4], summary_env, NULL};
    const char *pb[] = {"b.json", "--gate-id", "h100",    "--history-keep",     "2000",
                        "--site", "site",      "--label", "20260102T000000Z-b", NULL};
    assert_int_equal(script(&ws, "baseline-publish", env_summary, pb), 0);
    if (strstr(proc.err, "left out (--keep)") != NULL || strstr(proc.err, "warning") != NULL)
        fail_msg("the check or the site read fewer runs:\n%s", proc.err);
    char *summary = slurp(cg_workdir_in(&ws, "summary.md"));
    assert_non_null(summary);
    if (strstr(summary, "1006 runs of <code>history.jsonl</code>") == NULL)
        fail_msg("the history check did not read every run:\n%s", summary);
    free(summary);
    char *page = slurp(cg_workdir_in(&ws, "site/index.html")); /* its head: the header */
    assert_non_null(page);
    assert_non_null(strstr(page, "1006 runs of main"));
    assert_null(strstr(page, "folded into a summary"));
    free(page);
}

/* A first publish whose push is refused changes nothing in the checkout (no branch left behind),
 * and publishing again once the remote takes pushes works. */
static void test_action__a_refused_first_publish_can_be_retried(void **state)
{
    struct cg_workdir *d = *state;
    if (!executable("/usr/bin/git"))
        skip();
    checkout_with_remote(d);
    const char *hook = cg_workdir_in(d, "origin.git/hooks/pre-receive");
    FILE *f = fopen(hook, "w");
    assert_non_null(f);
    fputs("#!/bin/sh\necho 'refused by the test' >&2\nexit 1\n", f);
    fclose(f);
    assert_int_equal(chmod(hook, 0755), 0);
    const char *r1[] = {CG_TOOL_PATH, "run", "--out",    "ws/r1.json", "--runs", "1",
                        "--steps",    "2",   "--warmup", "0",          NULL};
    assert_int_equal(cg_proc_run(d->path, r1, NULL, &proc), 0);
    assert_int_equal(proc.exit_code, 0);

    struct cg_workdir ws;
    snprintf(ws.path, sizeof(ws.path), "%s", cg_workdir_in(d, "ws"));
    const char *const *env = publish_env;
    const char *p1[] = {"r1.json", "--label", "20260101T000000Z-a", NULL};
    assert_int_not_equal(script(&ws, "baseline-publish", env, p1), 0);
    if (strstr(proc.err, "refused by the test") == NULL)
        fail_msg("the push was not refused:\n%s", proc.err);
    no_gate_branch(d);

    assert_int_equal(unlink(hook), 0);
    if (script(&ws, "baseline-publish", env, p1) != 0)
        fail_msg("publishing again failed:\n%s", proc.err);
    const char *fetch[] = {"bl", NULL};
    assert_int_equal(script(&ws, "baseline-fetch", env, fetch), 0);
    assert_int_equal(runs_in(cg_workdir_in(&ws, "bl/baseline.json")), 1);
    no_gate_branch(d);
}

/* Only 'git ls-remote --exit-code' saying the branch does not exist means no baseline yet: a
 * remote that does not exist or cannot be reached fails fetch and publish (exit 3) with git's
 * reason; before, fetch said "no baseline" and the gate recorded a new one (a PASS). */
static void test_action__a_remote_that_cannot_be_reached_fails_the_fetch(void **state)
{
    struct cg_workdir *d = *state;
    if (!executable("/usr/bin/git"))
        skip();
    checkout_with_remote(d);
    git(d, "ws", "remote", "add", "gone", cg_workdir_in(d, "no-such-repo.git"));
    struct cg_workdir ws;
    snprintf(ws.path, sizeof(ws.path), "%s", cg_workdir_in(d, "ws"));
    const char *env[] = {"CANARY_GATE_BIN=" CG_BINARY_DIR, NULL};
    const char *missing_branch[] = {"bl0", NULL};
    assert_int_equal(script(&ws, "baseline-fetch", env, missing_branch), 0);
    assert_non_null(strstr(proc.err, "no branch 'canary-gate-baseline' on 'origin' yet"));
    const char *no_remote[] = {"bl1", "canary-gate-baseline", "nowhere", NULL};
    assert_int_equal(script(&ws, "baseline-fetch", env, no_remote), 3);
    if (strstr(proc.err, "cannot look for branch 'canary-gate-baseline' on 'nowhere'") == NULL ||
        strstr(proc.err, "no baseline") != NULL)
        fail_msg("said:\n%s", proc.err);
    const char *unreachable[] = {"bl2", "canary-gate-baseline", "gone", NULL};
    assert_int_equal(script(&ws, "baseline-fetch", env, unreachable), 3);
    assert_non_null(strstr(proc.err, "no-such-repo.git"));
    assert_true(access(cg_workdir_in(&ws, "bl2/baseline.json"), F_OK) != 0);
    const char *r1[] = {CG_TOOL_PATH, "run", "--out",    "ws/r1.json", "--runs", "1",
                        "--steps",    "2",   "--warmup", "0",          NULL};
    assert_int_equal(cg_proc_run(d->path, r1, NULL, &proc), 0);
    assert_int_equal(proc.exit_code, 0);
    const char *publish[] = {"r1.json", "--remote", "gone", NULL};
    assert_int_equal(script(&ws, "baseline-publish", env, publish), 3);
    assert_non_null(strstr(proc.err, "nothing published"));
    no_gate_branch(d);
}

/* Pushes the tree of the checkout "evil" to origin's baseline branch (replacing it). */
static void push_evil_branch(const struct cg_workdir *d, const char *message)
{
    git(d, "evil", "add", "-A", ".", NULL);
    git(d, "evil", "commit", "-q", "--allow-empty", message);
    git(d, "evil", "push", "-q", "-f", NULL);
}

/* A hostile baseline branch: a symbolic link in it is refused naming it (nothing written through
 * it), a directory among runs/ is skipped, and a run already published is recognised rather than
 * restarting the pool. */
static void test_action__a_hostile_baseline_branch_is_refused(void **state)
{
    struct cg_workdir *d = *state;
    if (!executable("/usr/bin/git"))
        skip();
    checkout_with_remote(d);
    assert_int_equal(mkdir(cg_workdir_in(d, "evil"), 0755), 0);
    assert_int_equal(mkdir(cg_workdir_in(d, "outside"), 0755), 0);
    git(d, "evil", "init", "-q", NULL, NULL);
    git(d, "evil", "remote", "add", "origin", cg_workdir_in(d, "origin.git"));
    git(d, "evil", "checkout", "-q", "-b", "canary-gate-baseline");
    git(d, "evil", "config", "push.default", "current", NULL);
    assert_int_equal(symlink(cg_workdir_in(d, "outside"), cg_workdir_in(d, "evil/runs")), 0);
    push_evil_branch(d, "-mruns is a link");

    const char *r1[] = {CG_TOOL_PATH, "run", "--out",    "ws/r1.json", "--runs", "1",
                        "--steps",    "2",   "--warmup", "0",          NULL};
    assert_int_equal(cg_proc_run(d->path, r1, NULL, &proc), 0);
    assert_int_equal(proc.exit_code, 0);
    struct cg_workdir ws;
    snprintf(ws.path, sizeof(ws.path), "%s", cg_workdir_in(d, "ws"));
    const char *const *env = publish_env;
    const char *p1[] = {"r1.json", "--label", "20260101T000000Z-a", NULL};
    assert_int_equal(script(&ws, "baseline-publish", env, p1), 2);
    if (strstr(proc.err, "symbolic link 'runs'") == NULL)
        fail_msg("said:\n%s", proc.err);
    assert_int_equal(rmdir(cg_workdir_in(d, "outside")), 0); /* still empty */

    /* runs/zz.json a directory: skipped */
    assert_int_equal(unlink(cg_workdir_in(d, "evil/runs")), 0);
    assert_int_equal(mkdir(cg_workdir_in(d, "evil/runs"), 0755), 0);
    assert_int_equal(mkdir(cg_workdir_in(d, "evil/runs/zz.json"), 0755), 0);
    FILE *f = fopen(cg_workdir_in(d, "evil/runs/zz.json/x"), "w");
    assert_non_null(f);
    fputs("x\n", f);
    fclose(f);
    push_evil_branch(d, "-ma directory among the runs");
    if (script(&ws, "baseline-publish", env, p1) != 0)
        fail_msg("a directory among the runs failed the publish:\n%s", proc.err);

    /* the same run again, under another label: recognised, the pool not restarted */
    const char *again[] = {"r1.json", "--label", "20260102T000000Z-b", NULL};
    assert_int_equal(script(&ws, "baseline-publish", env, again), 0);
    assert_non_null(strstr(proc.err, "is already published as 'runs/20260101T000000Z-a.json'"));
    const char *fetch[] = {"bl", NULL};
    assert_int_equal(script(&ws, "baseline-fetch", env, fetch), 0);
    char *history = slurp(cg_workdir_in(&ws, "bl/history.jsonl"));
    assert_non_null(history);
    assert_null(strstr(history, "restart"));
    assert_int_equal(occurrences(history, "\"type\":\"run\""), 1);
    free(history);
    no_gate_branch(d);
}

/* The end-to-end tests run in a fresh temporary directory each. */
#define IN_WORKDIR(fn) cmocka_unit_test_setup_teardown(fn, cg_workdir_setup, cg_workdir_teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_action__is_complete_and_consistent),
        cmocka_unit_test(test_action__example_workflows_are_valid),
        IN_WORKDIR(test_action__gate_script_takes_a_pytorch_teams_options),
        IN_WORKDIR(test_action__gate_scripts_whole_option_names_are_the_tools),
        IN_WORKDIR(test_action__gate_script_records_then_gates_the_builtin_canary),
        IN_WORKDIR(test_action__gate_script_comments_on_a_pull_request),
        IN_WORKDIR(test_action__command_with_a_line_break_is_refused),
        IN_WORKDIR(test_action__gate_script_measures_the_base_beside_the_head),
        IN_WORKDIR(test_action__baseline_branch_keeps_the_newest_k),
        IN_WORKDIR(test_action__two_gates_keep_their_own_baselines),
        IN_WORKDIR(test_action__a_gates_first_publish_records_its_accept),
        IN_WORKDIR(test_action__history_keep_reaches_the_check_and_the_site),
        IN_WORKDIR(test_action__a_refused_first_publish_can_be_retried),
        IN_WORKDIR(test_action__a_remote_that_cannot_be_reached_fails_the_fetch),
        IN_WORKDIR(test_action__a_hostile_baseline_branch_is_refused),
    };
    if (getenv("CG_TEST_FILTER") != NULL) /* one case while working on it: a glob of names */
        cmocka_set_test_filter(getenv("CG_TEST_FILTER"));
    return cmocka_run_group_tests(tests, NULL, NULL);
}
