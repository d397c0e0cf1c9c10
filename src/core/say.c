/* say: the formatting half of cg_say (say.h); the printing half is the command layer's. */
#include "say.h"

#include "buf.h"

#include <stdarg.h>

void cg_say(const struct cg_say *s, enum cg_say_kind kind, const char *fmt, ...)
{
    if (s == NULL || s->fn == NULL)
        return;
    struct cg_buf text;
    cg_buf_init(&text, 1 << 16);
    va_list ap;
    va_start(ap, fmt);
    int rc = cg_buf_vprintf(&text, fmt, ap);
    va_end(ap);
    if (rc == 0)
        s->fn(s, kind, cg_buf_str(&text));
    cg_buf_release(&text);
}
