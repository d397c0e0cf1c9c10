/*
 * jsonutil: reading a file that must hold exactly one JSON document, and a number written so that
 * what is not finite reads null.
 *
 * cJSON stops at the end of the first value and ignores what follows, so `cat base.json
 * slow.json > x.json` would read as base.json. Files the tool reads (artifacts, thresholds) hold
 * one document: anything but JSON white space after it is refused. Pure; thread-safe.
 */
#ifndef CG_JSONUTIL_H
#define CG_JSONUTIL_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

/* Parses the len bytes at text as one JSON document (caller frees the tree with cJSON_Delete).
 * NULL when it is not valid JSON, or when something other than white space follows the
 * document: then *trailing_at (when not NULL) gets the offset of that first byte, else len. */
cJSON *cg_json_parse_whole(const char *text, size_t len, size_t *trailing_at);

/* Finds a key given twice in one object anywhere in root (cJSON reads the first, jq and python
 * the last: a file could say two things): true with its path ("metrics.step_time_mean.alpha",
 * "runs[3].summary") in path (cap bytes, cut to fit), false when every object's keys differ. */
bool cg_json_duplicate_key(const cJSON *root, char *path, size_t cap);

/* v as a JSON number, or null when it is not finite (JSON has no NaN or infinity). NULL when out
 * of memory. */
cJSON *cg_json_number(double v);

#endif
