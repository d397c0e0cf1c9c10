/*
 * render: the report as GitHub would show it, through Debian's cmark-gfm (GitHub's own
 * markdown implementation, with the extensions GitHub enables: table, strikethrough, autolink,
 * tagfilter). Raw HTML is kept in the output (--unsafe) so that tests can see every tag the
 * markdown lets through before GitHub's sanitiser.
 *
 * cg_render_check_gfm fails the test (cmocka fail_msg) at the first problem in the HTML:
 *   - a tag outside the report's own vocabulary (headings, paragraphs, lists, tables, code,
 *     blockquote, strong/em, br, details/summary/sub, and the hidden marker comments);
 *   - a link (<a ...>), which autolinking or a hostile name would make;
 *   - a mention: '@' followed by a letter, digit, '-' or '_' in text outside <code> and <pre>
 *     (GitHub turns "@name" and "@org/team" there into notifications);
 *   - <details> blocks that are not balanced or close before they open.
 * Tests only: aborts the test when cmark-gfm is missing (ci/deps installs it).
 */
#ifndef CG_TEST_RENDER_H
#define CG_TEST_RENDER_H

#include <stddef.h>

/* Renders markdown (len bytes) with cmark-gfm; returns the HTML (malloc'ed, caller frees). Fails
 * the test when cmark-gfm cannot be run. */
char *cg_render_gfm(const char *md, size_t len);

/* Checks rendered HTML as described above; what names the input in messages. */
void cg_render_check_gfm(const char *html, const char *what);

/* The text of the first table cell (<td>...</td>) whose contents hold needle, malloc'ed, or
 * NULL. */
char *cg_render_cell_with(const char *html, const char *needle);

#endif
