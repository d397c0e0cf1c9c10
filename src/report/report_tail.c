/*
 * report_tail: the end of a failed canary's output (logtail.h) in the error report and on the
 * terminal, so a reviewer who cannot open the log on the runner sees why it failed. The text
 * arrives redacted; here it is escaped for its medium: control characters (colour codes, a
 * terminal's escape sequences) shown as '?', each line cut to CG_REPORT_TAIL_LINE_MAX bytes, and
 * in markdown set in a fenced code block whose fence is longer than any run of backticks in it,
 * so no line of the canary's can end the block, open HTML or mention anyone. Never prints.
 */
#include "report.h"

#include "fmt.h"

#include <string.h>

#define CG_REPORT_TAIL_LINE_MAX 400 /* bytes of one line shown */

/* The note above the lines: how many are shown, how many were left out and where the rest is;
 * the path escaped for markdown (md) or the terminal. */
static int add_note(struct cg_buf *out, const struct cg_log_tail *t, bool md, bool cut_lines)
{
    int rc;
    if (t->lines_before == 0 && !t->first_cut)
        rc = cg_buf_printf(out, "its whole output, %zu line%s", t->n_lines,
                           t->n_lines == 1 ? "" : "s");
    else
        rc = cg_buf_printf(out, "its last %zu line%s of %zu; the %zu before them left out",
                           t->n_lines, t->n_lines == 1 ? "" : "s",
                           t->n_lines + t->lines_before, t->lines_before);
    if (t->first_cut)
        rc |= cg_buf_adds(out, "; the first shown is the end of a longer line");
    if (cut_lines)
        rc |= cg_buf_printf(out, "; lines cut at %d bytes", CG_REPORT_TAIL_LINE_MAX);
    rc |= cg_buf_adds(out, "; secrets hidden as " CG_REDACT_MARK "; the whole output is in '");
    if (md)
        rc |= cg_md_escape(out, t->path, 512);
    else
        rc |= cg_term_escape(out, t->path, 512);
    return rc | cg_buf_adds(out, "'");
}

/* Each line of t escaped for a terminal (and inside a code block), prefix before each, '\n'
 * after each; *cut set when a line was longer than CG_REPORT_TAIL_LINE_MAX. */
static int add_lines(struct cg_buf *out, const struct cg_log_tail *t, const char *prefix,
                     bool *cut)
{
    struct cg_buf line;
    int rc = 0;
    cg_buf_init(&line, SIZE_MAX);
    for (const char *p = t->text; rc == 0 && p != NULL;) {
        const char *nl = strchr(p, '\n');
        size_t n = nl != NULL ? (size_t)(nl - p) : strlen(p);
        cg_buf_reset(&line);
        rc = cg_buf_add(&line, p, n);
        if (rc == 0) {
            *cut |= n > CG_REPORT_TAIL_LINE_MAX;
            rc = cg_buf_adds(out, prefix);
            rc |= cg_term_escape(out, cg_buf_str(&line), CG_REPORT_TAIL_LINE_MAX);
            rc |= cg_buf_adds(out, "\n");
        }
        p = nl != NULL ? nl + 1 : NULL;
    }
    cg_buf_release(&line);
    return rc;
}

/* The longest run of c in s. */
static size_t longest_run(const char *s, char c)
{
    size_t best = 0, run = 0;
    for (; *s; s++) {
        run = *s == c ? run + 1 : 0;
        best = run > best ? run : best;
    }
    return best;
}

int cg_report_log_tail_markdown(const struct cg_log_tail *t, struct cg_buf *md)
{
    struct cg_buf lines;
    bool cut = false;
    int rc = 0;
    if (t == NULL || t->path == NULL)
        return 0;
    cg_buf_init(&lines, SIZE_MAX);
    if (t->text != NULL)
        rc = add_lines(&lines, t, "", &cut);
    rc |= cg_buf_adds(md, "\n\n**The end of the canary's output** (");
    rc |= add_note(md, t, true, cut);
    if (t->text == NULL) {
        rc |= cg_buf_adds(md, "): it printed nothing.");
        goto done;
    }
    rc |= cg_buf_adds(md, "):\n\n");
    size_t fence = longest_run(cg_buf_str(&lines), '`') + 1;
    fence = fence < 3 ? 3 : fence;
    for (size_t k = 0; k < fence; k++)
        rc |= cg_buf_adds(md, "`");
    rc |= cg_buf_adds(md, "text\n");
    rc |= cg_buf_adds(md, cg_buf_str(&lines));
    for (size_t k = 0; k < fence; k++)
        rc |= cg_buf_adds(md, "`");
done:
    cg_buf_release(&lines);
    return rc != 0 ? CG_ENOMEM : 0;
}

int cg_report_log_tail_terminal(const struct cg_log_tail *t, struct cg_buf *out)
{
    struct cg_buf lines;
    bool cut = false;
    int rc = 0;
    if (t == NULL || t->path == NULL)
        return 0;
    cg_buf_init(&lines, SIZE_MAX);
    if (t->text != NULL)
        rc = add_lines(&lines, t, "  | ", &cut);
    rc |= cg_buf_adds(out, "canary-gate: the end of the canary's output (");
    rc |= add_note(out, t, false, cut);
    rc |= cg_buf_adds(out, t->text == NULL ? "): it printed nothing\n" : "):\n");
    rc |= cg_buf_adds(out, cg_buf_str(&lines));
    cg_buf_release(&lines);
    return rc != 0 ? CG_ENOMEM : 0;
}
