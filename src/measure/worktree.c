/*
 * worktree: the commits of a range and a worktree per probed commit (see worktree.h).
 */
#define _XOPEN_SOURCE 700
#include "worktree.h"

#include "buf.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Copies the first line of text (at most n - 1 bytes) into dst. */
static void first_line(const char *text, size_t len, char *dst, size_t n)
{
    size_t k = 0;
    while (k < len && k + 1 < n && text[k] != '\n' && text[k] != '\0')
        k++;
    memcpy(dst, text, k);
    dst[k] = '\0';
}

/* Reads what is ready on fd into b; false at its end (or an error). */
static bool drain(int fd, struct cg_buf *b, bool *over)
{
    char chunk[4096];
    ssize_t got = read(fd, chunk, sizeof(chunk));
    if (got < 0 && (errno == EINTR || errno == EAGAIN))
        return true;
    if (got <= 0)
        return false;
    if (cg_buf_add(b, chunk, (size_t)got) != 0)
        *over = true;
    return true;
}

/* Runs git -C repo args... with stdout into out and stderr into errbuf; *status its exit status
 * (-1 when it did not exit by itself). 0, or CG_EIO when git could not run or ran too long. */
static int git(const char *repo, const char *const *args, struct cg_buf *out, struct cg_buf *errbuf,
               int *status, struct cg_err *err)
{
    const char *argv[16];
    size_t k = 0;
    argv[k++] = "git";
    argv[k++] = "-C";
    argv[k++] = repo;
    for (size_t i = 0; args[i] != NULL && k + 1 < sizeof(argv) / sizeof(argv[0]); i++)
        argv[k++] = args[i];
    argv[k] = NULL;
    int po[2], pe[2];
    if (pipe(po) != 0)
        return cg_err_set(err, CG_EIO, "cannot run git: %s", strerror(errno));
    if (pipe(pe) != 0) {
        close(po[0]);
        close(po[1]);
        return cg_err_set(err, CG_EIO, "cannot run git: %s", strerror(errno));
    }
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(po[0]), close(po[1]), close(pe[0]), close(pe[1]);
        return cg_err_set(err, CG_EIO, "cannot run git: %s", strerror(e));
    }
    if (pid == 0) {
        setpgid(0, 0);
        int null_fd = open("/dev/null", O_RDONLY);
        if (null_fd >= 0)
            dup2(null_fd, 0);
        dup2(po[1], 1);
        dup2(pe[1], 2);
        close(po[0]), close(pe[0]);
        execvp("git", (char *const *)argv);
        _exit(127);
    }
    setpgid(pid, pid);
    close(po[1]);
    close(pe[1]);
    bool open_o = true, open_e = true, over = false;
    double deadline = now_s() + CG_GIT_TIMEOUT_S;
    while ((open_o || open_e) && now_s() < deadline) {
        struct pollfd fds[2] = {{po[0], POLLIN, 0}, {pe[0], POLLIN, 0}};
        if (poll(fds, 2, 200) < 0 && errno != EINTR)
            break;
        if (open_o && (fds[0].revents & (POLLIN | POLLHUP)))
            open_o = drain(po[0], out, &over);
        if (open_e && (fds[1].revents & (POLLIN | POLLHUP)))
            open_e = drain(pe[0], errbuf, &over);
    }
    bool late = open_o || open_e;
    if (late)
        kill(-pid, SIGKILL);
    close(po[0]);
    close(pe[0]);
    int ws = 0;
    while (waitpid(pid, &ws, 0) < 0 && errno == EINTR) {
    }
    *status = WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
    if (late)
        return cg_err_set(err, CG_EIO, "git %s took more than %d s", args[0], CG_GIT_TIMEOUT_S);
    if (over)
        return cg_err_set(err, CG_EIO, "git %s wrote more than %u bytes", args[0],
                          CG_GIT_MAX_OUTPUT);
    if (*status == 127)
        return cg_err_set(err, CG_EIO, "cannot run git: is it installed and on PATH?");
    return 0;
}

/* Runs git and fails with its first line of errors (prefixed by what) when it exits non-zero:
 * code is the error's code then. The output is in out, NUL-terminated. */
static int git_ok(const char *repo, const char *const *args, struct cg_buf *out, int code,
                  const char *what, struct cg_err *err)
{
    struct cg_buf eb;
    int status = 0;
    cg_buf_init(&eb, 64 * 1024);
    int rc = git(repo, args, out, &eb, &status, err);
    if (rc == 0 && status != 0) {
        char line[256];
        first_line(eb.data ? eb.data : "", eb.len, line, sizeof(line));
        rc = cg_err_set(err, code, "%s: %s", what, line[0] ? line : "git failed");
    }
    if (rc == 0 && cg_buf_add(out, "", 1) != 0)
        rc = cg_err_set(err, CG_ENOMEM, "out of memory");
    cg_buf_release(&eb);
    return rc;
}

/* Whether git answers yes to args: exits 0 (merge-base --is-ancestor) and, when says is not
 * NULL, writes a first line beginning with it (rev-parse --is-shallow-repository: "true"); false
 * when it cannot be asked. */
static bool git_yes(const char *repo, const char *const *args, const char *says)
{
    struct cg_buf out, eb;
    struct cg_err ignored;
    int status = -1;
    cg_err_init(&ignored);
    cg_buf_init(&out, 4096);
    cg_buf_init(&eb, 4096);
    bool yes = git(repo, args, &out, &eb, &status, &ignored) == 0 && status == 0;
    if (yes && says != NULL)
        yes = out.len >= strlen(says) && memcmp(out.data, says, strlen(says)) == 0;
    cg_buf_release(&out);
    cg_buf_release(&eb);
    return yes;
}

/* "; the clone is shallow ..." when repo's history is cut (a CI checkout's fetch depth), else
 * "": what is missing may be beyond the cut. */
static const char *shallow_hint(const char *repo)
{
    const char *args[] = {"rev-parse", "--is-shallow-repository", NULL};
    return git_yes(repo, args, "true")
               ? "; the clone is shallow (a CI checkout fetches 1 commit by "
                 "default): fetch the history with 'git fetch --unshallow', or "
                 "'fetch-depth: 0' in actions/checkout"
               : "";
}

/* The length of the full object name that text holds before its newline or end: 40 hex digits
 * (SHA-1) or 64 (SHA-256); 0 when it holds none. */
static size_t full_name_len(const char *text)
{
    size_t hex = strspn(text, "0123456789abcdef");
    return (hex == 40 || hex == CG_GIT_SHA_MAX) && (text[hex] == '\n' || text[hex] == '\0') ? hex
                                                                                            : 0;
}

/* The full name of the commit rev names, into sha (40 or 64 hex digits). */
static int resolve(const char *repo, const char *rev, char sha[CG_GIT_SHA_MAX + 1],
                   struct cg_err *err)
{
    struct cg_buf out;
    char spec[512], what[600];
    cg_buf_init(&out, 4096);
    int n = snprintf(spec, sizeof(spec), "%s^{commit}", rev);
    snprintf(what, sizeof(what), "'%s' is not a commit of '%s'", rev, repo);
    if (n < 0 || (size_t)n >= sizeof(spec) || rev[0] == '-')
        return cg_err_set(err, CG_EINPUT, "%s", what);
    const char *args[] = {"rev-parse", "--verify", "--quiet", spec, NULL};
    int rc = git_ok(repo, args, &out, CG_EINPUT, what, err);
    size_t len = rc == 0 ? full_name_len(out.data) : 0;
    if (rc == 0 && len == 0)
        rc = cg_err_set(err, CG_EINPUT, "%s", what);
    if (rc == CG_EINPUT)
        cg_err_set(err, CG_EINPUT, "%s%s", what, shallow_hint(repo));
    if (rc == 0) {
        memcpy(sha, out.data, len);
        sha[len] = '\0';
    }
    cg_buf_release(&out);
    return rc;
}

void cg_git_commits_free(struct cg_git_commit *c, size_t n)
{
    for (size_t i = 0; c != NULL && i < n; i++) {
        free(c[i].subject);
        free(c[i].author);
        free(c[i].date);
    }
    free(c);
}

/* Why good (sha g) is not on bad's (sha b) first-parent line, and what to do: CG_EINPUT. */
static int not_on_line(const char *repo, const char *good, const char *bad, const char *g,
                       const char *b, struct cg_err *err)
{
    const char *after[] = {"merge-base", "--is-ancestor", b, g, NULL};
    const char *below[] = {"merge-base", "--is-ancestor", g, b, NULL};
    if (git_yes(repo, after, NULL))
        return cg_err_set(err, CG_EINPUT, "--good '%s' comes after --bad '%s': swap them", good,
                          bad);
    if (git_yes(repo, below, NULL))
        return cg_err_set(err, CG_EINPUT,
                          "--good '%s' reaches --bad '%s' only through a merged branch: bisect "
                          "walks --bad's first parents; give a --good on that line (the merge's "
                          "first parent)",
                          good, bad);
    return cg_err_set(err, CG_EINPUT, "--good '%s' is not an ancestor of --bad '%s'%s", good, bad,
                      shallow_hint(repo));
}

int cg_git_range(const char *repo, const char *good, const char *bad, struct cg_git_commit **out,
                 size_t *n, struct cg_err *err)
{
    char g[CG_GIT_SHA_MAX + 1], b[CG_GIT_SHA_MAX + 1], range[2 * CG_GIT_SHA_MAX + 3];
    struct cg_buf list;
    struct cg_git_commit *c = NULL;
    size_t lines = 0;
    *out = NULL;
    *n = 0;
    int rc = resolve(repo, good, g, err);
    if (rc == 0)
        rc = resolve(repo, bad, b, err);
    if (rc != 0)
        return rc;
    if (strcmp(g, b) == 0)
        return cg_err_set(err, CG_EINPUT, "--good and --bad name the same commit (%.12s)", g);
    cg_buf_init(&list, CG_GIT_MAX_OUTPUT);
    snprintf(range, sizeof(range), "%s..%s", g, b);
    const char *args[] = {"rev-list", "--reverse", "--first-parent", range, NULL};
    if ((rc = git_ok(repo, args, &list, CG_EIO, "git rev-list failed", err)) != 0)
        goto done;
    for (size_t i = 0; i < list.len; i++)
        lines += list.data[i] == '\n';
    if (lines > CG_GIT_MAX_COMMITS) {
        rc = cg_err_set(err, CG_EINPUT, "the range holds %zu commits, more than %d", lines,
                        CG_GIT_MAX_COMMITS);
        goto done;
    }
    if ((c = calloc(lines + 1, sizeof(*c))) == NULL) {
        rc = cg_err_set(err, CG_ENOMEM, "out of memory");
        goto done;
    }
    memcpy(c[0].sha, g, sizeof(g));
    size_t k = 1, len = strlen(g);
    for (char *line = list.data; k <= lines && *line != '\0'; k++) {
        char *nl = strchr(line, '\n');
        if (nl == NULL || (size_t)(nl - line) != len || full_name_len(line) != len)
            break;
        memcpy(c[k].sha, line, len);
        c[k].sha[len] = '\0';
        line = nl + 1;
    }
    /* good must be on bad's first-parent line: the first commit after it has it as parent */
    char parent[CG_GIT_SHA_MAX + 1] = "", first[CG_GIT_SHA_MAX + 2];
    if (k >= 2) {
        snprintf(first, sizeof(first), "%s^", c[1].sha);
        if (resolve(repo, first, parent, err) != 0)
            parent[0] = '\0';
    }
    if (k < 2 || strcmp(c[k - 1].sha, b) != 0 || strcmp(parent, g) != 0) {
        rc = not_on_line(repo, good, bad, g, b, err);
        goto done;
    }
    *out = c;
    *n = k;
    c = NULL;
done:
    cg_git_commits_free(c, lines + 1);
    cg_buf_release(&list);
    return rc;
}

static char *dup_field(const char *s)
{
    size_t n = strlen(s);
    char *d = malloc(n + 1);
    if (d != NULL)
        memcpy(d, s, n + 1);
    return d;
}

int cg_git_describe(const char *repo, struct cg_git_commit *c, struct cg_err *err)
{
    struct cg_buf out;
    cg_buf_init(&out, 64 * 1024);
    const char *args[] = {"log", "-1", "--no-show-signature", "--format=%s%x00%an%x00%aI",
                          c->sha, NULL};
    int rc = git_ok(repo, args, &out, CG_EIO, "git log failed", err);
    if (rc == 0) {
        const char *subject = out.data, *author = subject + strlen(subject) + 1;
        const char *end = out.data + out.len;
        const char *date = author < end ? author + strlen(author) + 1 : end;
        if (author >= end || date >= end) {
            rc = cg_err_set(err, CG_EIO, "git log gave no author for %.12s", c->sha);
        } else {
            char *nl = strchr((char *)date, '\n');
            if (nl != NULL)
                *nl = '\0';
            free(c->subject), free(c->author), free(c->date);
            c->subject = dup_field(subject);
            c->author = dup_field(author);
            c->date = dup_field(date);
            if (c->subject == NULL || c->author == NULL || c->date == NULL)
                rc = cg_err_set(err, CG_ENOMEM, "out of memory");
        }
    }
    cg_buf_release(&out);
    return rc;
}

int cg_git_toplevel(const char *dir, char **top, struct cg_err *err)
{
    struct cg_buf out;
    char what[600];
    *top = NULL;
    cg_buf_init(&out, 64 * 1024);
    snprintf(what, sizeof(what), "'%s' is not in a git repository", dir);
    const char *args[] = {"rev-parse", "--show-toplevel", NULL};
    int rc = git_ok(dir, args, &out, CG_EINPUT, what, err);
    if (rc == 0) {
        char *nl = strchr(out.data, '\n');
        if (nl != NULL)
            *nl = '\0';
        if (out.data[0] == '\0')
            rc = cg_err_set(err, CG_EINPUT, "%s (a bare repository)", what);
        else if ((*top = dup_field(out.data)) == NULL)
            rc = cg_err_set(err, CG_ENOMEM, "out of memory");
    }
    cg_buf_release(&out);
    return rc;
}

/* path (absolute) with the symbolic links of its longest existing part resolved, the rest as
 * written, into dst (n bytes); false when it is not absolute or too long. */
static bool resolve_path(const char *path, char *dst, size_t n)
{
    char head[PATH_MAX], real[PATH_MAX];
    size_t cut = strlen(path);
    if (path[0] != '/' || cut >= sizeof(head))
        return false;
    memcpy(head, path, cut + 1);
    for (;;) { /* ends: "/" resolves */
        if (realpath(cut > 0 ? head : "/", real) != NULL) {
            int w = snprintf(dst, n, "%s%s", strcmp(real, "/") == 0 ? "" : real, path + cut);
            return w >= 0 && (size_t)w < n;
        }
        char *slash = strrchr(head, '/');
        if (slash == NULL)
            return false;
        cut = (size_t)(slash - head);
        *slash = '\0';
    }
}

/* Whether the path written at text (len bytes) lies inside top, not under skip: then *found. */
static bool path_inside(const char *top, const char *skip, const char *text, size_t len,
                        struct cg_worktree_path *found)
{
    char res[PATH_MAX];
    size_t tl = strlen(top);
    if (len >= sizeof(found->path) || tl <= 1)
        return false;
    memcpy(found->path, text, len);
    found->path[len] = '\0';
    if (!resolve_path(found->path, res, sizeof(res)) || strncmp(res, top, tl) != 0 ||
        (res[tl] != '/' && res[tl] != '\0') ||
        (skip != NULL && strncmp(res, skip, strlen(skip)) == 0))
        return false;
    const char *rel = res + tl;
    rel += strspn(rel, "/");
    size_t rl = strlen(rel);
    while (rl > 0 && rel[rl - 1] == '/')
        rl--;
    memcpy(found->rel, rel, rl);
    found->rel[rl] = '\0';
    return true;
}

/* Where a path glued to an option would begin in word (len bytes): past the leading '-' and the
 * option's letters ('-I/x', '-X/x', '--include-dir/x'); 0 when the word is no such option. */
static size_t after_option(const char *word, size_t len)
{
    size_t dashes = 0;
    while (dashes < len && word[dashes] == '-')
        dashes++;
    size_t i = dashes;
    while (i < len && (isalnum((unsigned char)word[i]) || word[i] == '-' || word[i] == '_'))
        i++;
    return dashes > 0 && i > dashes && i < len && word[i] == '/' ? i : 0;
}

/* The paths in word (len bytes, one word as a program gets it): a path begins it, follows '='
 * or ':', or, in a word beginning with '-', follows the option's letters (after_option); it ends
 * at ':'. At most max into out; returns how many. */
static size_t paths_in_word(const char *top, const char *skip, const char *word, size_t len,
                            struct cg_worktree_path *out, size_t max)
{
    size_t k = 0, glued = after_option(word, len);
    for (size_t i = 0; i < len && k < max; i++) {
        if (word[i] != '/' || (i > 0 && i != glued && word[i - 1] != '=' && word[i - 1] != ':'))
            continue;
        size_t n = i;
        while (n < len && word[n] != ':')
            n++;
        if (path_inside(top, skip, word + i, n - i, &out[k]))
            k++;
        i = n;
    }
    return k;
}

/* Outside quotes, what ends a word of a shell line: blanks and operators (a backquote's command
 * is a line of its own). */
static bool shell_break(char c)
{
    return c != '\0' && strchr(" \t\n;&|()<>`", c) != NULL;
}

/* The next word of the shell line at *p into word (which holds strlen(*p) + 1 bytes), as /bin/sh
 * reads it without expanding anything: single quotes keep everything, double quotes all but a
 * backslash before $ ` " \ or a newline, a backslash outside quotes keeps the character after it
 * (a newline after it is no character); a quote left open runs to the end. *p is moved past the
 * word; its length in *len. False when no word is left. */
static bool next_shell_word(const char **p, char *word, size_t *len)
{
    const char *s = *p;
    size_t n = 0;
    while (shell_break(*s))
        s++;
    if (*s == '\0')
        return false;
    while (*s != '\0' && !shell_break(*s)) {
        if (*s == '\\') {
            if (s[1] != '\0' && s[1] != '\n')
                word[n++] = s[1];
            s += s[1] != '\0' ? 2 : 1;
        } else if (*s == '\'') {
            for (s++; *s != '\0' && *s != '\''; s++)
                word[n++] = *s;
            s += *s != '\0';
        } else if (*s == '"') {
            for (s++; *s != '\0' && *s != '"'; s++) {
                if (*s == '\\' && s[1] != '\0' && strchr("$`\"\\\n", s[1]) != NULL) {
                    if (s[1] != '\n')
                        word[n++] = s[1];
                    s++;
                } else {
                    word[n++] = *s;
                }
            }
            s += *s != '\0';
        } else {
            word[n++] = *s++;
        }
    }
    word[n] = '\0';
    *p = s;
    *len = n;
    return true;
}

/* The paths of text read as a shell line's words (next_shell_word). */
static size_t paths_in_line(const char *top, const char *skip, const char *text,
                            struct cg_worktree_path *out, size_t max)
{
    char *word = malloc(strlen(text) + 1); /* a word is never longer than its line */
    size_t k = 0, len = 0;
    if (word == NULL)
        return 0;
    for (const char *p = text; k < max && next_shell_word(&p, word, &len);)
        k += paths_in_word(top, skip, word, len, out + k, max - k);
    free(word);
    return k;
}

size_t cg_worktree_paths_in(const char *top, const char *skip, const char *text, bool shell,
                            struct cg_worktree_path *out, size_t max)
{
    if (shell)
        return paths_in_line(top, skip, text, out, max);
    /* one argument: its paths as written when each names what exists ('/x/my data.txt'), else
     * its words as a shell line's too (the string of 'sh -c', 'bash -c "exec /x/train.sh"') */
    size_t k = paths_in_word(top, skip, text, strlen(text), out, max);
    struct stat st;
    bool exist = k > 0;
    for (size_t j = 0; j < k && exist; j++)
        exist = lstat(out[j].path, &st) == 0;
    return exist ? k : paths_in_line(top, skip, text, out, max);
}

bool cg_git_has_path(const char *repo, const char *sha, const char *rel)
{
    char spec[CG_GIT_SHA_MAX + 2 + PATH_MAX];
    int n = snprintf(spec, sizeof(spec), "%s:%s", sha, rel);
    if (n < 0 || (size_t)n >= sizeof(spec))
        return false;
    const char *args[] = {"cat-file", "-e", spec, NULL};
    return git_yes(repo, args, NULL);
}

int cg_worktree_add(const char *repo, const char *sha, const char *path, struct cg_err *err)
{
    struct cg_buf out;
    char what[600];
    cg_buf_init(&out, 1 << 20);
    snprintf(what, sizeof(what), "cannot check out %.12s in '%s'", sha, path);
    const char *args[] = {"worktree", "add", "--detach", "--quiet", path, sha, NULL};
    int rc = git_ok(repo, args, &out, CG_EIO, what, err);
    cg_buf_release(&out);
    return rc;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    if (flag == FTW_DP)
        return rmdir(path) != 0 && errno != ENOENT;
    return unlink(path) != 0 && errno != ENOENT;
}

int cg_worktree_remove(const char *repo, const char *path, struct cg_err *err)
{
    struct cg_buf out;
    cg_buf_init(&out, 1 << 20);
    const char *args[] = {"worktree", "remove", "--force", "--force", path, NULL};
    struct cg_err ignored;
    cg_err_init(&ignored);
    git_ok(repo, args, &out, CG_EIO, "git worktree remove failed", &ignored);
    struct stat st;
    int rc = 0;
    if (lstat(path, &st) == 0 && nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS) != 0)
        rc = cg_err_set(err, CG_EIO, "cannot remove the worktree '%s': %s", path,
                        strerror(errno));
    cg_buf_reset(&out);
    const char *prune[] = {"worktree", "prune", NULL};
    git_ok(repo, prune, &out, CG_EIO, "git worktree prune failed", &ignored);
    cg_buf_release(&out);
    return rc;
}
