/*
 * logtail: the last lines of the canary's log, counted and redacted (see logtail.h). Reads the
 * file once in 64 KiB blocks, keeping the newest block pair, so memory stays bounded whatever
 * the log's size.
 */
#define _GNU_SOURCE
#include "logtail.h"

#include "fsutil.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void cg_log_tail_init(struct cg_log_tail *t)
{
    memset(t, 0, sizeof(*t));
}

void cg_log_tail_release(struct cg_log_tail *t)
{
    free(t->path);
    free(t->text);
    cg_log_tail_init(t);
}

/* Streams fd to its end: the lines it holds (a last line without a newline counts) and its last
 * CG_LOG_TAIL_WINDOW_BYTES in win (*win_len bytes), *whole when win holds the entire file. */
static int scan(int fd, char *win, size_t *win_len, size_t *lines, bool *whole)
{
    static char block[CG_LOG_TAIL_WINDOW_BYTES];
    size_t kept = 0, total_lines = 0;
    unsigned long long total = 0;
    char last = '\n';
    for (;;) {
        ssize_t got = read(fd, block, sizeof(block));
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            return -1;
        if (got == 0)
            break;
        for (ssize_t k = 0; k < got; k++)
            total_lines += block[k] == '\n';
        last = block[got - 1];
        total += (unsigned long long)got;
        /* keep the newest CG_LOG_TAIL_WINDOW_BYTES of what was read so far */
        size_t g = (size_t)got;
        if (kept + g > CG_LOG_TAIL_WINDOW_BYTES) {
            size_t drop = kept + g - CG_LOG_TAIL_WINDOW_BYTES;
            drop = drop > kept ? kept : drop;
            memmove(win, win + drop, kept - drop);
            kept -= drop;
        }
        size_t from = g > CG_LOG_TAIL_WINDOW_BYTES ? g - CG_LOG_TAIL_WINDOW_BYTES : 0;
        memcpy(win + kept, block + from, g - from);
        kept += g - from;
    }
    *win_len = kept;
    *lines = total_lines + (total > 0 && last != '\n');
    *whole = total == kept;
    return 0;
}

int cg_log_tail_read(const char *path, size_t max_lines, const struct cg_redact *r,
                     struct cg_log_tail *t, struct cg_err *err)
{
    static char win[CG_LOG_TAIL_WINDOW_BYTES + 1];
    struct stat st;
    size_t len = 0, lines = 0;
    bool whole = false;
    cg_log_tail_init(t);
    if ((t->path = strdup(path)) == NULL)
        return cg_err_set(err, CG_ENOMEM, "out of memory");
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return cg_err_set(err, CG_EIO, "cannot read '%s': %s", path, strerror(errno));
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return cg_err_set(err, CG_EIO, "cannot read '%s': %s", path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) { /* a FIFO would never end */
        close(fd);
        return cg_err_set(err, CG_EINPUT, "cannot read '%s': %s, not a log file", path,
                          cg_file_type_name(st.st_mode));
    }
    int rc = scan(fd, win, &len, &lines, &whole);
    int e = errno;
    close(fd);
    if (rc != 0)
        return cg_err_set(err, CG_EIO, "cannot read '%s': %s", path, strerror(e));
    while (len > 0 && win[len - 1] == '\n')
        len--; /* the final newline ends the last line; blank lines before it count */
    win[len] = '\0';
    if (len == 0 || max_lines == 0) {
        t->lines_before = lines;
        return 0;
    }
    /* the start of the last max_lines lines, or of the window */
    size_t start = len, n = 0;
    while (start > 0 && n < max_lines) {
        if (win[start - 1] == '\n' && ++n == max_lines)
            break;
        start--;
    }
    if (start == 0 && !whole) { /* the window begins inside a line */
        char *nl = memchr(win, '\n', len);
        if (nl != NULL)
            start = (size_t)(nl - win) + 1; /* that line's end is left out with those before */
        else
            t->first_cut = true; /* one line longer than the window: its end only */
    }
    size_t shown = 1;
    for (size_t k = start; k < len; k++)
        shown += win[k] == '\n';
    t->n_lines = shown;
    t->lines_before = lines > shown ? lines - shown : 0;
    if ((t->text = cg_redact_apply(r, win + start)) == NULL) {
        cg_log_tail_release(t);
        return cg_err_set(err, CG_ENOMEM, "out of memory");
    }
    return 0;
}
