/*
 * cmd_show: `canary-gate show FILE` prints a human summary of a run artifact (its renderer is
 * report/report_show.c): the options, the chart's characters from the locale, the exit code.
 */
#include "cmd.h"
#include "cmd_options.h"

#include "artifact.h"
#include "buf.h"
#include "report_show.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char usage_text[] =
    "usage: canary-gate show FILE [--ops N] [--ascii] [--no-chart]\n"
    "\n"
    "Prints a human summary of a run artifact, with a chart of its per-step times.\n"
    "\n"
    "  --ops N      list the N ops with the most time per step (default 10)\n"
    "  --ascii      draw the chart with ASCII characters (the default when the locale\n"
    "               (LC_ALL, LC_CTYPE, LANG) is not UTF-8)\n"
    "  --no-chart   leave the chart out\n"
    "  -h, --help   show this help\n";

static const struct option options[] = {
    {"ops", required_argument, NULL, 'n'},
    {"ascii", no_argument, NULL, 'a'},
    {"no-chart", no_argument, NULL, 'c'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* True when the locale in effect for characters (the first set of LC_ALL, LC_CTYPE, LANG) is
 * UTF-8; an unset locale is "C", which is not. */
static bool locale_is_utf8(void)
{
    const char *vars[] = {"LC_ALL", "LC_CTYPE", "LANG"};
    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
        const char *v = getenv(vars[i]);
        if (v == NULL || v[0] == '\0')
            continue;
        const char *dot = strchr(v, '.');
        return dot != NULL &&
               (strncasecmp(dot + 1, "utf-8", 5) == 0 || strncasecmp(dot + 1, "utf8", 4) == 0);
    }
    return false;
}

int cmd_show(int argc, char **argv)
{
    long top = 10;
    bool ascii = false, no_chart = false;
    int c;
    optind = 1;
    struct cg_cmd_given given = {0};
    while ((c = cg_cmd_getopt("show", argc, argv, ":h", options, &given)) != -1) {
        switch (c) {
        case 'n':
            if (cg_cmd_parse_count("show", "--ops", optarg, 0, 100000, &top) != 0)
                return CG_EXIT_INPUT;
            break;
        case 'a':
            ascii = true;
            break;
        case 'c':
            no_chart = true;
            break;
        case 'h':
            fputs(usage_text, stdout);
            return CG_EXIT_PASS;
        default:
            return cg_cmd_option_error("show", c, argv);
        }
    }
    if (argc - optind != 1)
        return cg_cmd_usage_error("show", "expected one artifact");
    struct cg_err err;
    struct cg_artifact a;
    struct cg_buf out;
    cg_err_init(&err);
    cg_buf_init(&out, 16 << 20);
    int exit_code = CG_EXIT_PASS;
    if (cg_artifact_load(argv[optind], &a, &err) != 0) {
        exit_code = cg_cmd_fail(&err);
        goto done;
    }
    enum cg_show_chart chart = no_chart                     ? CG_SHOW_CHART_NONE
                               : ascii || !locale_is_utf8() ? CG_SHOW_CHART_ASCII
                                                            : CG_SHOW_CHART_UTF8;
    if (cg_report_show(&a, top, chart, &out) != 0) {
        cg_err_set(&err, CG_ENOMEM, "cannot show '%s': out of memory", argv[optind]);
        exit_code = cg_cmd_fail(&err);
    } else {
        fputs(cg_buf_str(&out), stdout);
    }
done:
    cg_buf_release(&out);
    cg_artifact_release(&a);
    return exit_code;
}
