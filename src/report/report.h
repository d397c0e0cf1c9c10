/*
 * report: a verdict rendered as markdown (the PR comment and job summary), terminal text and
 * JSON, with the texts they share (the escaping and number formats they use are fmt.h's).
 *
 * Renderers write into a struct cg_buf; they never print. Every string that comes from an
 * artifact (op names, commands, GPU and CPU names) goes through cg_md_escape or cg_term_escape,
 * and so does every metric note (which may quote one: cg_report_note).
 * The markdown report never exceeds CG_REPORT_MAX_BYTES (GitHub's comment limit is 65,536
 * characters, counted here as UTF-16 code units; a byte count under it is a count of characters
 * and of UTF-16 units under it: a 4-byte character is two units). Not thread-safe.
 */
#ifndef CG_REPORT_H
#define CG_REPORT_H

#include "artifact.h"
#include "buf.h"
#include "err.h"
#include "fmt.h"
#include "logtail.h"
#include "verdict.h"

#include <stdbool.h>

#define CG_REPORT_MAX_BYTES 65000

/* How the canary of a's runs ended: *runs of them were stopped by the gate once measured,
 * *steps the most steps (warm-up included) one was stopped after (-1 when none was). */
void cg_report_stopped(const struct cg_artifact *a, size_t *runs, int64_t *steps);

/* "stopped after N steps (warm-up + measured) in K of M runs" for a's runs into dst; "" when no
 * run was stopped. */
void cg_report_stopped_text(const struct cg_artifact *a, char *dst, size_t n);

/* Where a side's steps and tokens came from ("steps from each optimizer.step() (marked by
 * canary-gate); tokens: --tokens-per-step 256"): fixed words and numbers only. */
void cg_report_sources_text(const struct cg_artifact *a, char *dst, size_t n);

/* A metric's Change cell (terminal and markdown alike, numbers and fixed words only): the
 * shift the test decides on with its interval, "+2.1% (-0.5% to +4.9%)", an end the test cannot
 * bound written "no bound" (both: "no interval with these runs"); and when the shown medians
 * change differently (by a point or more, or the other way), that change too, "; medians
 * -7.3%", so the cell never disagrees with the Baseline and Current beside it unexplained. */
void cg_report_change_text(const struct cg_metric_result *r, char *dst, size_t n);

/* Whether the terminal and markdown tables show metric m: every metric, but energy per token and
 * MFU only when some run of either side recorded the GPU's state (runs[].gpu_state; artifacts
 * from before it say nothing of it). The JSON verdict lists every metric. */
bool cg_report_metric_shown(const struct cg_verdict *v, enum cg_metric m);

/* The process states' line of every report (numbers and fixed words: no escaping needed), ""
 * when the floor was not compared over runs: the runs of each side in slow states, the share
 * test's p, and what it means ("a change that makes slow processes likelier" when it is a
 * finding), or why the shares are not read as states; "" too when every run is in the pooled
 * fast state and the share is not gated. */
void cg_report_states_text(const struct cg_verdict *v, char *dst, size_t n);

/* The line that the script changed since the baseline (signature.h: a file the current runs'
 * command line names, with contents no baseline run had), a plain fact and not a changed canary;
 * nothing when none changed or the baseline recorded no file. markdown: "**Script:** ..." with
 * the names in <code>, else "note: ..." for the terminal. 0 or CG_ENOMEM. */
int cg_report_code_change(const struct cg_verdict *v, bool markdown, struct cg_buf *out);

/* The line naming the kernel choices among the runs of both sides when their kernel sets differ
 * ("2 kernel choices among the runs: sm90_xmma_gemm_... in 7 runs (baseline 2, current 5; 1 in
 * the fast state, 6 slow), ..."): each choice by the first of its kernels that some other choice
 * lacks (or "without" the first it lacks), shortened; the process states when the floor compared
 * the pooled fast state. Nothing when every run ran the same kernels or none, or when the choices
 * are the sides' (signature.h: by_side). 0 or CG_ENOMEM. */
int cg_report_kernel_choices(const struct cg_verdict *v, bool markdown, struct cg_buf *out);

/* A commit as the reports show it: a full hash (40 digits, SHA-1, or 64, SHA-256) cut to its
 * first 12 digits, anything else as it is (cut to n bytes); escape it for the output. */
void cg_report_short_commit(const char *commit, char *dst, size_t n);

/* What to do when GPU metrics are unavailable because another tool holds CUPTI or the GPU's
 * profiling hardware, from the recorded reason (the holder CUPTI names, or its error): Nsight,
 * torch.profiler (kineto), DCGM profiling, or another CUPTI client; NULL for any other reason. A
 * fixed sentence: nothing from the reason is copied into it. */
const char *cg_report_gpu_advice(const char *reason);

/* A count per step: "3", "2.5", "0" (bytes rows the same, in bytes). */
void cg_report_count_value(double v, char *dst, size_t n);

/* The change of a count row ("+1", "-3", "+0.5"; "" when a side lacks it). */
void cg_report_count_change(const struct cg_count_result *r, char *dst, size_t n);

/* The growth a count row allows ("+0", "+10% (+1.2)", "not gated"). */
void cg_report_count_allowed(const struct cg_count_result *r, const struct cg_thresholds *t,
                             char *dst, size_t n);

/* True for a count row the reports list: it fails, is inconclusive or unavailable, or changed
 * (the others are counted, not listed). */
bool cg_report_count_listed(const struct cg_count_result *r);

/* True when the reports list the places of row r: it has some, and it is not a by-type
 * synchronisation row (the synchronisations' sum lists them once). */
bool cg_report_where_shown(const struct cg_count_result *r);

/* A changed place of a count row in words, around the range's name (escaped by the caller and
 * put between head and tail): head "+1 per step in " or "-1 per step after ", tail
 * " (0 -> 1)"; for the calls at no place (w->range NULL) head holds the whole text, "+1 per
 * step in no NVTX range (0 -> 1)", and tail is "". */
void cg_report_where_parts(const struct cg_count_where *w, char *head, size_t hn, char *tail,
                           size_t tn);

/* The label of a count row without its name for a range row ("host synchronisations",
 * "calls of the NVTX range"); the caller adds a range row's name, escaped. */
const char *cg_report_count_label(const struct cg_count_result *r);

/* The output a text is for: plain (the JSON verdict, the commit status), markdown or terminal. */
enum cg_text_for { CG_TEXT_PLAIN, CG_TEXT_MARKDOWN, CG_TEXT_TERMINAL };

/* Longest note of a metric (struct cg_metric_result.note), in bytes. */
#define CG_NOTE_MAX_BYTES 255

/* Appends a metric's note for output to. A note may quote artifact text (the GPU state's reasons,
 * the step range's name, the GPU reason), so markdown gets it through cg_md_escape and the
 * terminal through cg_term_escape; plain text as it is. 0 or CG_ENOMEM. */
int cg_report_note(const char *note, enum cg_text_for to, struct cg_buf *out);

/* The verdict's one-line headline, identical in every output ("FAIL: step time mean +12.3% ..."):
 * numbers and fixed words, and the note of the metric it names, as it is. */
void cg_verdict_headline(const struct cg_verdict *v, char *dst, size_t n);

/* The same headline for output to: the note it quotes escaped by cg_report_note. 0 or
 * CG_ENOMEM. */
int cg_verdict_headline_for(const struct cg_verdict *v, enum cg_text_for to, struct cg_buf *out);

/* Renders the markdown report. gate_id NULL or "" uses the plain marker. 0 or CG_ENOMEM. */
int cg_report_markdown(const struct cg_verdict *v, const char *gate_id, struct cg_buf *out,
                       struct cg_err *err);

/* Renders the terminal table and verdict line. color adds ANSI colours. 0 or CG_ENOMEM. */
int cg_report_terminal(const struct cg_verdict *v, bool color, struct cg_buf *out,
                       struct cg_err *err);

/* Renders the JSON verdict (schema "canary-gate/verdict"). Returns a malloc'ed string (caller
 * frees) or NULL when out of memory. */
char *cg_report_json(const struct cg_verdict *v);

/* A gate that produced no comparison: the canary failed (verdict "error", its reason line in the
 * report's hidden markers) or no baseline existed and this run was recorded as it. */
enum cg_notice_kind { CG_NOTICE_CANARY_FAILED, CG_NOTICE_BASELINE_RECORDED };

struct cg_notice {
    enum cg_notice_kind kind;
    const char *id;                 /* the gate id of the report's marker; NULL: the default */
    const char *body;               /* the reason, or what was recorded (cg_report_recorded_text) */
    const struct cg_log_tail *tail; /* the end of the canary's output, or NULL */
    const char *by;                 /* the command named in the footer ("ab"), or NULL */
    const char *recorded_baseline;  /* the recorded baseline's path, or NULL */
};

/* A notice's documents: into md (when not NULL) the markdown report: the marker, the verdict line
 * (and for a failed canary the reason line from body), the headline as a heading, body escaped,
 * the end of the canary's output when there is one (cg_report_log_tail_markdown) and the footer;
 * into *json (when not NULL; the caller frees it) the JSON verdict: verdict ("error" or "pass"),
 * headline (the body) and the recorded baseline's path. 0, CG_EINPUT naming the gate id, or
 * CG_ENOMEM. */
int cg_report_notice(const struct cg_notice *n, struct cg_buf *md, char **json, struct cg_err *err);

/* The JSON verdict of a notice (cg_report_notice). Returns a malloc'ed string (caller frees) or
 * NULL when out of memory. */
char *cg_report_notice_json(const struct cg_notice *n);

/* The notice body of a baseline recorded at path from the runs of cur, into dst. */
void cg_report_recorded_text(const char *path, const struct cg_artifact *cur, char *dst, size_t n);

/* The markdown footer every comment ends with: the tool's version, and the command when by is
 * not NULL. 0 or CG_ENOMEM. */
int cg_report_md_footer(struct cg_buf *md, const char *by);

/* Appends the end of a failed canary's output (read by cg_log_tail_read) as a paragraph saying
 * how much is shown, how much was left out and where the whole is, then the lines in a fenced
 * code block, control characters shown as '?', each line cut to 400 bytes. Nothing for NULL.
 * 0 or CG_ENOMEM. */
int cg_report_log_tail_markdown(const struct cg_log_tail *t, struct cg_buf *md);

/* The same for the terminal: a 'canary-gate: the end of the canary's output (...)' line, then
 * each line after "  | ", escaped the same way. 0 or CG_ENOMEM. */
int cg_report_log_tail_terminal(const struct cg_log_tail *t, struct cg_buf *out);

#endif
