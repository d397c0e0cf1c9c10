/*
 * fmt: what every renderer of text needs and nothing more: escaping for a markdown table cell
 * and for a terminal, and the number formats (durations, percentages, a metric's value with its
 * unit). Writes into caller buffers; never prints. Used by the reports, the diagnosis, the
 * charts, the collector's warnings and 'show'.
 */
#ifndef CG_FMT_H
#define CG_FMT_H

#include "buf.h"
#include "metric.h"

#include <stddef.h>

/* Appends s escaped for a markdown table cell: characters that could end the cell, open HTML,
 * a link, emphasis or an autolink become HTML entities (':' of a scheme's "://", the '.' of
 * "www." in any case); an '@' before a name's character gets a zero-width joiner (U+200D) after
 * it, so GitHub sees no user or team mention nor an e-mail address to link; control characters
 * become spaces; invalid UTF-8 becomes U+FFFD. Keeps at most max_bytes of s (cutting at a character
 * boundary and adding an ellipsis). Returns 0 or CG_ENOMEM. */
int cg_md_escape(struct cg_buf *out, const char *s, size_t max_bytes);

/* Appends s for HTML text or a quoted attribute value: & < > " ' as entities, control characters
 * as spaces, invalid UTF-8 as U+FFFD; never cut. Returns 0 or CG_ENOMEM. */
int cg_html_escape(struct cg_buf *out, const char *s);

/* Appends s with control characters (terminal escape sequences included) shown as '?', cut to
 * max_bytes with "...". Returns 0 or CG_ENOMEM. */
int cg_term_escape(struct cg_buf *out, const char *s, size_t max_bytes);

/* Formats a metric value with its unit ("25.31 ms", "1.50 GiB", "12345 tok/s"); "n/a" for NAN. */
void cg_fmt_metric(enum cg_metric m, double value, char *dst, size_t n);

/* Formats nanoseconds with an adaptive unit ("812 ns", "3.42 us", "25.31 ms", "1.20 s"). */
void cg_fmt_ns(double ns, char *dst, size_t n);

/* Formats a signed percentage ("+12.3%", "-0.4%", "n/a"). */
void cg_fmt_pct(double pct, char *dst, size_t n);

#endif
