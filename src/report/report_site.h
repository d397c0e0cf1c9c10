/*
 * report_site: main's history drawn as one static HTML page (`canary-gate history site`,
 * docs/history.md). The charts are SVG written here: the page needs no script, no network and
 * no library to be viewed. Every string from the history (commits, reasons, gate ids) is escaped
 * for HTML; commit links are built from a checked prefix and the percent-encoded commit.
 */
#ifndef CG_REPORT_SITE_H
#define CG_REPORT_SITE_H

#include "buf.h"
#include "changepoint.h"
#include "history.h"

#include <stdbool.h>

#define CG_SITE_MAX_CHANGES 50 /* rows of the table of latest changes, per gate */

struct cg_site_opts {
    const char *title;              /* the page's title; NULL: "canary-gate: main's history" */
    const char *commit_url;         /* prefix of a commit's link (cg_site_url_ok), or NULL */
    const char *source;             /* the history file's name, shown; may be NULL */
    const struct cg_cp_options *cp; /* change point detection; NULL: the defaults */
};

/* True when prefix may start a commit link: http:// or https://, then printable ASCII without
 * spaces, quotes, angle brackets or backslashes. */
bool cg_site_url_ok(const char *prefix);

/* Renders the page of every gate in h: per gate one chart per metric its runs have (the median
 * and its interval per run, environment segments shaded, change points and accepts marked, each
 * point titled with its commit), the level of each metric across each segment, and a table of
 * the latest change points with links to their commits. 0, CG_EINPUT (bad detection options) or
 * CG_ENOMEM. */
int cg_report_site(const struct cg_history *h, const struct cg_site_opts *o, struct cg_buf *out);

#endif
