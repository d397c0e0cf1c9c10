/*
 * cmd_history_site: `canary-gate history site` draws main's history as a static site.
 */
#include "cmd.h"
#include "cmd_history_common.h"
#include "cmd_options.h"

#include "fsutil.h"
#include "history.h"
#include "outputs.h"
#include "report_site.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char site_usage[] =
    "usage: canary-gate history site --history FILE --out DIR [options]\n"
    "\n"
    "Writes main's history as a static site, DIR/index.html: per gate one chart per metric\n"
    "(each run of main a point, the median of its runs with their interval as a band,\n"
    "environment segments shaded, change points and accepted regressions marked, every mark\n"
    "titled with its commit), each metric's level across its segments, and a table of the\n"
    "latest change points with links to their commits. The charts are SVG drawn by canary-gate:\n"
    "the page has no script and loads nothing from the network. DIR is created when missing;\n"
    "index.html is replaced atomically.\n"
    "\n"
    "  --history FILE      the history file\n"
    "  --out DIR           where to write index.html\n"
    "  --title TEXT        the page's title (default \"canary-gate: main's history\")\n"
    "  --commit-url URL    prefix of a commit's link, e.g.\n"
    "                      https://github.com/OWNER/REPO/commit/ (default: none; from\n"
    "                      GITHUB_SERVER_URL and GITHUB_REPOSITORY when both are set)\n"
    "  --alpha A, --min-segment N, --permutations N\n"
    "                      change point detection, as for 'history check'\n"
    "  --keep N            the newest N runs of each gate are drawn (default 1000, what\n"
    "                      'history append' keeps of each gate), of the file's first 64\n"
    "                      gates; the file is read a line at a time, in bounded memory\n"
    "  -h, --help          show this help\n"
    "\n"
    "exit codes: 0 written, 2 usage error or a history that cannot be read, 3 DIR or\n"
    "            index.html could not be written\n";

_Static_assert(CG_HISTORY_MAX_GATES == 64, "site_usage names the gates read");

static const struct option site_options[] = {
    {"history", required_argument, NULL, 'f'},
    {"out", required_argument, NULL, 'o'},
    {"title", required_argument, NULL, 't'},
    {"commit-url", required_argument, NULL, 'u'},
    CG_CHANGEPOINT_OPTIONS,
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

int cmd_history_site(int argc, char **argv)
{
    const char *path = NULL, *dir = NULL, *title = NULL, *url = NULL;
    char env_url[600] = "";
    struct cg_cmd_cp_opts cp;
    cg_cmd_cp_opts_init(&cp);
    int c, bad;
    optind = 1;
    struct cg_cmd_given given = {0};
    while ((c = cg_cmd_getopt("history site", argc, argv, ":h", site_options, &given)) != -1) {
        if ((bad = cg_cmd_cp_option("history site", c, optarg, &cp)) != 1) {
            if (bad)
                return bad;
            continue;
        }
        switch (c) {
        case 'f':
            path = optarg;
            break;
        case 'o':
            dir = optarg;
            break;
        case 't':
            title = optarg;
            break;
        case 'u':
            url = optarg;
            break;
        case 'h':
            fputs(site_usage, stdout);
            return CG_EXIT_PASS;
        default:
            return cg_cmd_option_error("history site", c, argv);
        }
    }
    if (path == NULL || dir == NULL)
        return cg_cmd_usage_error("history site", "missing %s",
                                  path == NULL ? "--history FILE" : "--out DIR");
    if (optind != argc)
        return cg_cmd_usage_error("history site", "unexpected argument '%s'", argv[optind]);
    const char *server = getenv("GITHUB_SERVER_URL"), *repo = getenv("GITHUB_REPOSITORY");
    if (url == NULL && server && repo && server[0] && repo[0]) {
        snprintf(env_url, sizeof(env_url), "%s/%s/commit/", server, repo);
        url = env_url;
    }
    if (url != NULL && !cg_site_url_ok(url))
        return cg_cmd_usage_error("history site",
                                  "%s '%s': expected http:// or https:// and printable ASCII "
                                  "without spaces, quotes or angle brackets%s",
                                  url == env_url ? "the commit URL made from GITHUB_SERVER_URL "
                                                   "and GITHUB_REPOSITORY"
                                                 : "--commit-url",
                                  url, url == env_url ? "; give --commit-url" : "");
    const char *why = title ? cg_history_text_problem(title, 200) : NULL;
    if (why != NULL)
        return cg_cmd_usage_error("history site", "--title: %s (1 to 200 bytes of UTF-8)", why);

    struct cg_err err;
    struct cg_history h = {0};
    struct cg_buf page;
    int exit_code = CG_EXIT_PASS;
    size_t len = strlen(dir) + sizeof("/index.html");
    char *index = malloc(len);
    cg_err_init(&err);
    cg_buf_init(&page, (size_t)1 << 28);
    if (index == NULL) {
        cg_err_set(&err, CG_ENOMEM, "out of memory");
        exit_code = cg_cmd_fail(&err);
        goto done;
    }
    snprintf(index, len, "%s/index.html", dir);
    struct stat st;
    struct cg_outputs paths;
    cg_outputs_init(&paths);
    cg_outputs_add(&paths, CG_PATH_INPUT, "--history", path);
    if (stat(dir, &st) == 0) /* a DIR still to be made holds no history */
        cg_outputs_add(&paths, CG_PATH_OUTPUT, "--out's index.html", index);
    if ((exit_code = cg_cmd_check_outputs(&paths)) != 0 ||
        (exit_code = cg_cmd_history_load_newest(path, cp.keep, &h)) != 0)
        goto done;
    const char *base = strrchr(path, '/');
    struct cg_site_opts so = {
        .title = title, .commit_url = url, .source = base ? base + 1 : path, .cp = &cp.cp};
    if (cg_report_site(&h, &so, &page) != 0) {
        cg_err_set(&err, CG_ENOMEM, "cannot draw '%s': out of memory", path);
        exit_code = cg_cmd_fail(&err);
        goto done;
    }
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        cg_err_set(&err, CG_EIO, "cannot create '%s': %s", dir, strerror(errno));
        exit_code = cg_cmd_fail(&err);
        goto done;
    }
    if (cg_file_write_atomic(index, cg_buf_str(&page), page.len, &err) != 0) {
        exit_code = cg_cmd_fail(&err);
        goto done;
    }
    fprintf(stderr, "canary-gate: history site '%s' (%zu bytes) from '%s'\n", index, page.len,
            path);
done:
    free(index);
    cg_buf_release(&page);
    cg_history_release(&h);
    return exit_code;
}
