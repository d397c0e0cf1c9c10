/*
 * cmd_bisect: `canary-gate bisect --good A --bad B [options] -- CANARY CMD...` finds the first
 * commit of A..B (along B's first parents) that made the canary slower, or changed an exact
 * count, with the gate's statistics (docs/bisect.md). The search is bisect.c's; each probed
 * commit is checked out in a detached worktree of its own under a private temporary directory
 * (worktree.c: the user's working tree is never touched), built there with --build, and its
 * canary run with that worktree as its working directory. A timing metric is measured in pairs
 * against the good end, turn about (A B B A ..., interleave.c), with sequential looks
 * (sequential.h: the paired plan and each look's alpha); an exact count takes one run per
 * commit. The ends come first: when bad is not significantly worse than good, nothing is
 * searched. Every worktree and the temporary directory are removed at the end whatever
 * happened, Ctrl-C included (interrupts are caught, the canary or build in progress stopped).
 * Exit: 0 found, or nothing to find; 2 usage or input; 3 could not decide (every commit between
 * skipped or unresolved, the budget spent), interrupted, or a run-time failure.
 */
#include "cmd.h"
#include "cmd_bisect_session.h"

#include "bisect.h"
#include "cmd_options.h"
#include "cmd_seq.h"
#include "collect.h"
#include "count.h"
#include "fmt.h"
#include "fsutil.h"
#include "interleave.h"
#include "ladder.h"
#include "launch.h"
#include "paired.h"
#include "report.h"
#include "report_bisect.h"
#include "sequential.h"
#include "stale.h"
#include "verdict.h"
#include "worktree.h"

#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage_text[] =
    "usage: canary-gate bisect --good A --bad B [options] -- CANARY CMD ARGS...\n"
    "\n"
    "Finds the first commit between A and B (along B's first parents) that made the canary\n"
    "slower, or raised an exact count. Each probed commit is checked out in a worktree of its\n"
    "own (never your working tree), built with --build there, and its canary run with that\n"
    "worktree as its working directory, measured against A turn about (A B B A ...). The ends\n"
    "are measured first: when B is not significantly worse than A, there is nothing to find.\n"
    "A commit is like bad when its change against A is significant and at least half of B's,\n"
    "like good when it is clearly below that, between when it is apart from both (the\n"
    "regression came in steps: each step is searched), else unresolved (a neighbour is probed).\n"
    "A commit that does not build or whose canary fails is skipped. An absolute path into your\n"
    "checkout in CMD (a 'sh -c' string's too) or --build is refused when the commits hold it\n"
    "(every commit would use yours): name it relative to the repository's root.\n"
    "\n"
    "  --good A               the last commit known to be fast (any name git knows)\n"
    "  --bad B                the commit known to be slow\n"
    "  --build \"CMD\"          run by /bin/sh in each probed commit's worktree before its canary\n"
    "  --metric NAME          step_time_floor (default: the fast steps, which a busy\n"
    "                         machine's stalls do not move), step_time_mean, step_time_p95,\n"
    "                         tokens_per_sec, or a count (kernels, synchronizations, ranges,\n"
    "                         allocations, ...: one run per commit decides)\n"
    "  --repo DIR             the repository (default: the one holding the current directory)\n"
    "  --runs N               pairs per look (default 6, at least 3; a count: 1 run)\n"
    "  --max-runs N           pairs per commit at most while it is unresolved, and the bad\n"
    "                         end's as the budget allows (default 2 x --runs; below --runs\n"
    "                         is refused; a count: unused)\n"
    "  --budget SEC           time of the whole bisection at most (builds and canaries); a look\n"
    "                         or a commit is only begun when its estimated time fits\n"
    "  --spending NAME        alpha over a commit's looks: pocock (default), obrien-fleming,\n"
    "                         bonferroni\n";

static const char usage_more[] =
    "  --thresholds FILE      alpha and the measurement defaults (default: default)\n"
    "  --steps N, --warmup N, --timeout SEC, --kill-grace SEC, --step-range NAME,\n"
    "  --steps-from WHERE, --let-finish: as for 'canary-gate run'\n"
    "  --report FILE.md       write the markdown report (for an issue or a PR comment)\n"
    "  --json FILE            write the JSON result\n"
    "  --id NAME              the report's hidden marker id (default bisect)\n"
    "  -h, --help             show this help\n"
    "\n"
    "exit codes: 0 the first bad commit found (or nothing to find), 2 usage error or invalid\n"
    "            input, 3 could not decide (commits skipped or unresolved, the budget spent),\n"
    "            interrupted, or the tool failed at run time\n";

#define BISECT_DEFAULT_PAIRS 6
/* The worktrees' directory under TMPDIR: TMP_PREFIX and 6 characters of mkdtemp's. */
#define TMP_PREFIX "canary-gate-bisect."

enum { OPT_GOOD = CG_OPT_COMMAND, OPT_BAD, OPT_BUILD, OPT_METRIC, OPT_REPO };

static const struct option options[] = {
    CG_MEASURE_OPTIONS,
    {"max-runs", required_argument, NULL, CG_SOPT_MAX_RUNS},
    {"budget", required_argument, NULL, CG_SOPT_BUDGET},
    {"spending", required_argument, NULL, CG_SOPT_SPENDING},
    {"report", required_argument, NULL, CG_ROPT_REPORT},
    {"json", required_argument, NULL, CG_ROPT_JSON},
    {"id", required_argument, NULL, CG_ROPT_ID},
    {"good", required_argument, NULL, OPT_GOOD},
    {"bad", required_argument, NULL, OPT_BAD},
    {"build", required_argument, NULL, OPT_BUILD},
    {"metric", required_argument, NULL, OPT_METRIC},
    {"repo", required_argument, NULL, OPT_REPO},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* --metric: a timing metric or a count row. */
static int parse_metric(const char *name, struct cg_bisect_opts *o)
{
    static const enum cg_metric timing[] = {CG_M_STEP_TIME_MEAN, CG_M_STEP_TIME_P95,
                                            CG_M_STEP_TIME_FLOOR, CG_M_TOKENS_PER_SEC};
    for (size_t i = 0; i < sizeof(timing) / sizeof(timing[0]); i++) {
        if (strcmp(name, cg_metric_name(timing[i])) == 0) {
            o->timing = timing[i];
            o->count_row = -1;
            return 0;
        }
    }
    if (cg_count_parse(name, &o->count_row) == 0 && !cg_count_is_bytes(o->count_row))
        return 0;
    o->count_row = -1;
    return cg_cmd_usage_error("bisect",
                              "--metric '%s': expected step_time_mean, step_time_p95, "
                              "step_time_floor, tokens_per_sec or a count (kernels, ranges, ...)",
                              name);
}

static int parse_args(int argc, char **argv, struct cg_bisect_opts *o)
{
    int opt;
    struct cg_cmd_given given = {0};
    optind = 1;
    while ((opt = cg_cmd_getopt("bisect", argc, argv, "+:h", options, &given)) != -1) {
        int bad = cg_measure_option("bisect", opt, optarg, &o->m);
        if (bad == 1)
            bad = cg_cmd_seq_option("bisect", opt, optarg, &o->seq);
        if (bad == 1)
            bad = cg_report_option("bisect", opt, optarg, &o->report);
        if (bad != 1) {
            if (bad)
                return bad;
            continue;
        }
        switch (opt) {
        case OPT_GOOD:
            o->good = optarg;
            break;
        case OPT_BAD:
            o->bad = optarg;
            break;
        case OPT_BUILD:
            o->build = optarg;
            break;
        case OPT_METRIC:
            o->metric = optarg;
            break;
        case OPT_REPO:
            o->repo = optarg;
            break;
        case 'h':
            fputs(usage_text, stdout);
            fputs(usage_more, stdout);
            return -1;
        default:
            return cg_cmd_option_error("bisect", opt, argv);
        }
    }
    if (o->good == NULL || o->bad == NULL)
        return cg_cmd_usage_error("bisect", "--good A and --bad B are required");
    if (optind >= argc)
        return cg_cmd_usage_error("bisect", "the canary's command is required after '--'");
    if (o->build != NULL && o->build[0] == '\0')
        return cg_cmd_usage_error("bisect", "--build: expected a command");
    o->canary = argv + optind;
    return o->metric != NULL ? parse_metric(o->metric, o) : 0;
}

/* Writes the documents and prints the summary; returns the exit code. */
static int report(struct cg_bisect_session *s, enum cg_bisect_outcome outcome)
{
    struct cg_bisect_report r = {.outcome = outcome,
                                 .metric_name = s->o->metric,
                                 .metric = s->o->timing,
                                 .count_row = s->o->count_row,
                                 .commits = s->info,
                                 .n_commits = s->n,
                                 .search = &s->search,
                                 .probes = s->probes,
                                 .n_probes = s->n_probes,
                                 .budget_spent = s->budget_spent,
                                 .bad_end_cut = s->bad_end_cut,
                                 .bad_end_pairs = {s->bad_end_pairs[0], s->bad_end_pairs[1]},
                                 .seconds = cg_cmd_bisect_elapsed(s),
                                 .id = s->o->report.gate_id};
    for (size_t i = 0; i < s->n; i++)
        s->info[i] = (struct cg_bisect_commit_info){s->commits[i].sha, s->commits[i].subject,
                                                    s->commits[i].author, s->commits[i].date};
    struct cg_buf term, md;
    struct cg_err err;
    char *json = NULL;
    int exit_code = outcome == CG_BISECT_UNDECIDED ? CG_EXIT_RUNTIME : CG_EXIT_PASS;
    cg_err_init(&err);
    cg_buf_init(&term, 1 << 20);
    cg_buf_init(&md, CG_REPORT_MAX_BYTES);
    const char *md_path = s->o->report.report_path, *json_path = s->o->report.json_path;
    if (cg_bisect_terminal(&r, false, &term) != 0 ||
        (md_path != NULL && cg_bisect_markdown(&r, &md) != 0) ||
        (json_path != NULL && (json = cg_bisect_json(&r)) == NULL)) {
        cg_err_set(&err, CG_ENOMEM, "out of memory");
        exit_code = cg_cmd_fail(&err);
        goto done;
    }
    FILE *to = cg_cmd_table_stream(md_path, json_path);
    fwrite(term.data, 1, term.len, to);
    if ((md_path != NULL && cg_file_write_atomic(md_path, md.data, md.len, &err) != 0) ||
        (json_path != NULL && cg_file_write_atomic(json_path, json, strlen(json), &err) != 0))
        exit_code = cg_cmd_fail(&err);
    if (outcome == CG_BISECT_NOTHING && s->checkout_path[0] != '\0')
        fprintf(stderr,
                "canary-gate bisect: note: every commit used your checkout's '%s' (the warning "
                "above): were it made from the commits, the ends could not differ\n",
                s->checkout_path);
done:
    free(json);
    cg_buf_release(&term);
    cg_buf_release(&md);
    return exit_code;
}

/* The directory of a bisection killed (SIGKILL: nothing of its own cleanup ran) and its
 * worktrees, whose records git prunes from this repository (another repository's are pruned by
 * its next bisection, or git's own). */
static void remove_stale(const char *dir, void *ctx)
{
    const struct cg_bisect_session *s = ctx;
    struct cg_err err;
    cg_err_init(&err);
    cg_worktree_remove(s->repo, dir, &err); /* the directory's removal is checked by the caller */
}

/* The canary's words (each also as a shell line's, the string of 'sh -c': worktree.h) and
 * --build's command line, for absolute paths into the user's checkout (tmp_prefix: the
 * bisection's worktrees, passed over): the canary and --build run in each probed commit's
 * worktree, and a path into the checkout makes every commit run the checkout's (the ends
 * measured alike: "nothing to find" of a real regression). A path to what either end holds is
 * refused; one to what neither holds (data of the checkout's) is warned about, and kept in
 * s->checkout_path. 0, or the usage error's exit code. */
static int check_checkout_paths(struct cg_bisect_session *s, const char *tmp_prefix)
{
    struct cg_worktree_path found[4];
    const struct cg_bisect_opts *o = s->o;
    size_t words = 0;
    while (o->canary[words] != NULL)
        words++;
    for (size_t w = 0; w < words || (w == words && o->build != NULL); w++) {
        bool build = w == words;
        size_t k = cg_worktree_paths_in(s->repo, tmp_prefix, build ? o->build : o->canary[w], build,
                                        found, sizeof(found) / sizeof(found[0]));
        const char *whose = build ? "--build's" : "the canary's";
        for (size_t j = 0; j < k; j++) {
            if (cg_git_has_path(s->repo, s->commits[0].sha, found[j].rel) ||
                cg_git_has_path(s->repo, s->commits[s->n - 1].sha, found[j].rel))
                return cg_cmd_usage_error(
                    "bisect",
                    "%s '%s' is your checkout's ('%s'): every commit would use it instead of its "
                    "own; name it relative to the repository's root ('%s%s'): %s runs in each "
                    "probed commit's worktree",
                    whose, found[j].path, s->repo, found[j].rel[0] ? "./" : ".", found[j].rel,
                    build ? "--build" : "the canary");
            if (s->checkout_path[0] != '\0')
                continue;
            snprintf(s->checkout_path, sizeof(s->checkout_path), "%s", found[j].path);
            fprintf(stderr,
                    "canary-gate bisect: warning: %s '%s' is in your checkout ('%s') and in "
                    "neither end's commit: every commit uses that one, right for data, not for "
                    "what a commit builds (build that with --build, named relative to the "
                    "repository's root)\n",
                    whose, found[j].path, s->repo);
        }
    }
    return 0;
}

/* Opens the range and the good end, measures the bad end, searches and reports. */
static int run_bisect(struct cg_bisect_session *s)
{
    struct cg_err err;
    cg_err_init(&err);
    char *top = NULL;
    int rc = cg_git_toplevel(s->o->repo != NULL ? s->o->repo : ".", &top, &err);
    if (rc == 0) {
        s->repo = top;
        rc = cg_git_range(s->repo, s->o->good, s->o->bad, &s->commits, &s->n, &err);
    }
    if (rc == CG_EINPUT)
        return cg_cmd_usage_error("bisect", "%s", err.msg);
    if (rc != 0)
        return cg_cmd_fail(&err);
    if (s->commits == NULL || s->n < 2)
        return cg_cmd_usage_error("bisect", "%s..%s holds no commit to bisect", s->o->good,
                                  s->o->bad);
    char buf[PATH_MAX], first[PATH_MAX], ours[PATH_MAX + sizeof("/" TMP_PREFIX)];
    const char *tmpdir = cg_tmp_dir(buf); /* absolute: git runs in the repository */
    char *real = realpath(tmpdir, NULL);
    snprintf(ours, sizeof(ours), "%s/" TMP_PREFIX, real != NULL ? real : tmpdir);
    free(real);
    if ((rc = check_checkout_paths(s, ours)) != 0)
        return rc;
    s->info = calloc(s->n, sizeof(*s->info));
    s->probes = calloc(s->n, sizeof(*s->probes));
    size_t stale = cg_stale_clean_named(tmpdir, TMP_PREFIX, remove_stale, s, first, sizeof(first));
    if (stale > 0)
        fprintf(stderr,
                "canary-gate bisect: removed %zu director%s of bisections no longer running, "
                "with their worktrees ('%s'%s)\n",
                stale, stale == 1 ? "y" : "ies", first, stale > 1 ? ", ..." : "");
    int len = snprintf(s->tmp, sizeof(s->tmp), "%s/" TMP_PREFIX "XXXXXX", tmpdir);
    if (s->info == NULL || s->probes == NULL || len < 0 || (size_t)len >= sizeof(s->tmp) ||
        mkdtemp(s->tmp) == NULL) {
        s->tmp[0] = '\0';
        cg_err_set(&err, CG_EIO, "cannot create a directory for worktrees in '%s'", tmpdir);
        return cg_cmd_fail(&err);
    }
    if (cg_stale_mark(s->tmp, &err) != 0) /* so a bisection killed can be cleaned */
        return cg_cmd_fail(&err);
    fprintf(stderr, "canary-gate bisect: %zu commits from %.12s (good) to %.12s (bad), %s, %s\n",
            s->n, s->commits[0].sha, s->commits[s->n - 1].sha, s->o->metric,
            cg_cmd_bisect_exact(s) ? "one run per commit" : "pairs against good, turn about");
    struct cg_bisect_measured m = {.answer = CG_BISECT_SKIPPED};
    char reason[256];
    if ((rc = cg_cmd_bisect_open_good(s, &err)) == 0)
        rc = cg_cmd_bisect_probe(s, s->n - 1, &m, reason, sizeof(reason), &err);
    if (rc == 0 && m.answer == CG_BISECT_SKIPPED)
        rc = cg_err_set(&err, CG_EINPUT, "the bad end %.12s cannot be measured: %s",
                        s->commits[s->n - 1].sha, reason);
    if (rc == 0) {
        struct cg_bisect_measured g = {
            {0, 0, 0}, s->good_value, s->good_value, 0, CG_BISECT_LIKE_GOOD};
        g.runs = cg_cmd_bisect_exact(s) ? 1 : m.runs;
        g.value = cg_cmd_bisect_exact(s) ? s->good_value : m.good_value;
        cg_cmd_bisect_add_probe(s, 0, &g, "");
        cg_cmd_bisect_add_probe(s, s->n - 1, &m, "");
        rc = cg_bisect_init(&s->search, s->n, &m.level, &err);
    }
    if (rc == 0 && !cg_bisect_ends_differ(&m.level)) /* on all its looks, or the budget's */
        return report(s, s->bad_end_cut != CG_BISECT_CUT_NONE ? CG_BISECT_UNDECIDED
                                                              : CG_BISECT_NOTHING);
    if (rc == 0)
        rc = cg_cmd_bisect_search(s, &err);
    if (rc != 0) {
        if (cg_launch_interrupted() || cg_collect_interrupted())
            cg_err_set(&err, CG_ECANARY, "interrupted: the worktrees are removed, nothing is "
                                         "reported");
        return err.code == CG_EINPUT ? cg_cmd_usage_error("bisect", "%s", err.msg)
                                     : cg_cmd_fail(&err);
    }
    struct cg_bisect_step steps[CG_BISECT_MAX_STEPS];
    size_t k = cg_bisect_steps(&s->search, steps);
    bool all = true;
    for (size_t j = 0; j < k; j++)
        all = all && steps[j].found;
    return report(s, all ? CG_BISECT_FOUND : CG_BISECT_UNDECIDED);
}

static void session_end(struct cg_bisect_session *s)
{
    cg_collector_free(s->good_col);
    cg_artifact_release(&s->good_count);
    if (s->tmp[0] != '\0' && s->repo != NULL) {
        struct cg_err err;
        cg_err_init(&err);
        char wt[4200];
        cg_cmd_bisect_worktree_path(s, 0, wt, sizeof(wt));
        /* an interrupted bisection reports nothing: nothing names a log */
        bool keep = s->keep_logs && !cg_launch_interrupted() && !cg_collect_interrupted();
        if (cg_worktree_remove(s->repo, wt, &err) != 0 ||
            (!keep && cg_worktree_remove(s->repo, s->tmp, &err) != 0))
            fprintf(stderr, "canary-gate: %s\n", err.msg);
        else if (keep) {
            /* the user's now: without its owner file no later bisection takes it for one of a
             * bisection killed */
            char owner[sizeof(s->tmp) + sizeof("/" CG_STALE_OWNER)];
            snprintf(owner, sizeof(owner), "%s/" CG_STALE_OWNER, s->tmp);
            unlink(owner);
            fprintf(stderr,
                    "canary-gate bisect: the build and canary logs are kept in '%s' "
                    "(remove it when done)\n",
                    s->tmp);
        }
    }
    cg_bisect_release(&s->search);
    cg_git_commits_free(s->commits, s->n);
    free(s->info);
    free(s->probes);
    free(s->repo);
}

/* A timing metric compared on too few pairs: one pair compares steps within one process (it
 * named "first bad" commits identical to good), and a plan whose looks' levels are all 0 (the
 * signed-rank test cannot reach them with so few pairs) can never find anything. 0, or the
 * usage error's exit code. */
static int check_pairs(const struct cg_bisect_session *s)
{
    if (s->pairs < CG_TIMING_MIN_RUNS)
        return cg_cmd_usage_error("bisect",
                                  "--runs %ld: a timing metric needs %d pairs a look at least "
                                  "(one process cannot show how much processes differ); a count "
                                  "(--metric) takes one run",
                                  s->pairs, CG_TIMING_MIN_RUNS);
    struct cg_seq_plan plan;
    struct cg_err err;
    if (cg_cmd_bisect_make_plan(s, &plan, &err) != 0)
        return cg_cmd_usage_error("bisect", "%s", err.msg);
    double level[CG_SEQ_MAX_LOOKS], sum = 0;
    cg_seq_levels(&plan, s->o->timing, s->t.metric[s->o->timing].alpha, level);
    for (size_t k = 0; k < plan.n_looks; k++)
        sum += level[k];
    if (sum <= 0)
        return cg_cmd_usage_error("bisect",
                                  "--runs %ld --max-runs %ld: the signed-rank test of so few "
                                  "pairs cannot reach alpha %g at any look, so nothing could be "
                                  "found; raise --runs or --max-runs",
                                  s->pairs, s->max_pairs, s->t.metric[s->o->timing].alpha);
    return 0;
}

int cmd_bisect(int argc, char **argv)
{
    struct cg_bisect_opts o;
    struct cg_bisect_session s;
    struct cg_err err;
    memset(&o, 0, sizeof(o));
    memset(&s, 0, sizeof(s));
    cg_measure_opts_init(&o.m);
    cg_cmd_seq_opts_init(&o.seq);
    o.metric = "step_time_floor";
    o.timing = CG_M_STEP_TIME_FLOOR;
    o.count_row = -1;
    cg_err_init(&err);
    cg_artifact_init(&s.good_count);
    int rc = parse_args(argc, argv, &o);
    if (rc != 0)
        return rc < 0 ? CG_EXIT_PASS : rc;
    s.o = &o;
    long runs = 0;
    if (cg_measure_settle(&o.m, &s.t, &s.c, &runs, &err) != 0)
        return cg_cmd_fail(&err);
    s.pairs = o.m.runs > 0 ? o.m.runs : BISECT_DEFAULT_PAIRS;
    s.max_pairs = o.seq.max_runs > 0 ? o.seq.max_runs : 2 * s.pairs;
    s.budget_s = o.seq.budget_s;
    if (!cg_cmd_bisect_exact(
            &s)) { /* a count takes one run per commit: --runs and --max-runs are timing's */
        if (o.m.runs > 0 && (rc = cg_cmd_seq_check("bisect", &o.seq, s.pairs, true)) != 0)
            return rc;
        if (s.max_pairs < s.pairs) /* --runs' default: the same refusal, saying so */
            return cg_cmd_usage_error("bisect",
                                      "--max-runs %ld is below --runs %ld (its default): the "
                                      "first look alone takes more; give --max-runs %ld at least",
                                      s.max_pairs, s.pairs, s.pairs);
        if ((rc = check_pairs(&s)) != 0)
            return rc;
    }
    struct cg_outputs paths;
    cg_outputs_init(&paths);
    cg_cmd_add_thresholds(&paths, o.m.thresholds);
    cg_outputs_add(&paths, CG_PATH_OUTPUT, "--report", o.report.report_path);
    cg_outputs_add(&paths, CG_PATH_OUTPUT, "--json", o.report.json_path);
    if ((rc = cg_cmd_check_outputs(&paths)) != 0)
        return rc;
    cg_launch_catch_interrupts();
    s.t0 = cg_cmd_seq_now_s();
    int exit_code = run_bisect(&s);
    session_end(&s);
    return exit_code;
}
