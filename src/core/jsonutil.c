/* jsonutil: one JSON document per file (see jsonutil.h). */
#include "jsonutil.h"

#include <math.h>
#include <stdbool.h>

cJSON *cg_json_parse_whole(const char *text, size_t len, size_t *trailing_at)
{
    const char *end = NULL;
    if (trailing_at != NULL)
        *trailing_at = len;
    cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, false);
    if (root == NULL)
        return NULL;
    size_t at = (size_t)(end - text);
    while (at < len &&
           (text[at] == ' ' || text[at] == '\t' || text[at] == '\n' || text[at] == '\r'))
        at++;
    if (at < len) {
        cJSON_Delete(root);
        if (trailing_at != NULL)
            *trailing_at = at;
        return NULL;
    }
    return root;
}

cJSON *cg_json_number(double v)
{
    return isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull();
}
