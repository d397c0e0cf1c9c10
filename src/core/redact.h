/*
 * redact: secrets kept out of everything the tool writes about the canary's command line (the
 * artifact, the report, the PR comment and job summary built from it, the canary's log banner,
 * the terminal), and credentials kept out of URLs.
 *
 * What is hidden:
 *   - the values of environment variables whose names look secret: GITHUB_TOKEN and every name
 *     holding TOKEN, SECRET, KEY, PASSWORD, PASSWD or CREDENTIAL (any case), when the value has
 *     at least CG_REDACT_MIN_BYTES bytes (shorter ones, "1" or "true", would hide ordinary text);
 *   - the well-known token shapes, whatever variable holds them (CG_REDACT_TOKEN_SHAPES): GitHub
 *     (ghp_, gho_, ghs_, ghu_, ghr_ and github_pat_ tokens), Slack (xoxa-, xoxb-, xoxp-, ...
 *     tokens and hooks.slack.com/services/ webhook paths), AWS access key ids (AKIA, ASIA) and
 *     Hugging Face tokens (hf_);
 *   - every match of the --redact patterns (POSIX extended regular expressions);
 *   - the userinfo of a URL: in "scheme://user:password@host", "user:password" is hidden.
 * Each hidden piece becomes "***". Redaction works on the raw text, before any escaping (an
 * escaped value no longer matches).
 *
 * The command layer sets up one process-wide redactor (cg_redact_default) from the environment at
 * start and adds the --redact patterns; modules that write the command line use it. Not
 * thread-safe.
 */
#ifndef CG_REDACT_H
#define CG_REDACT_H

#include "err.h"

#include <stdbool.h>
#include <stddef.h>

#define CG_REDACT_MIN_BYTES 8
#define CG_REDACT_MAX_PATTERNS 16
#define CG_REDACT_PATTERN_MAX_BYTES 200
#define CG_REDACT_MARK "***"

/* The well-known token shapes every redactor hides (POSIX extended regular expressions; long
 * enough that ordinary words never match). */
#define CG_REDACT_TOKEN_SHAPES                                                                     \
    {"gh[pousr]_[A-Za-z0-9]{20,}", "github_pat_[A-Za-z0-9_]{20,}",                                \
     "xox[abposr]-[A-Za-z0-9-]{10,}", "hooks\\.slack\\.com/services/[A-Za-z0-9_/-]+",                \
     "(AKIA|ASIA)[0-9A-Z]{16}", "hf_[A-Za-z0-9]{20,}"}
#define CG_REDACT_N_TOKEN_SHAPES 6

struct cg_redact;

/* True when an environment variable of this name holds a secret (see the file header). */
bool cg_redact_secret_name(const char *name, size_t len);

/* A redactor for the secret-looking variables of env ("NAME=value" strings, NULL-terminated;
 * NULL for none) and the token shapes. Returns 0 or CG_ENOMEM; free with cg_redact_free. */
int cg_redact_new(char *const *env, struct cg_redact **out, struct cg_err *err);

/* Adds a --redact pattern: a POSIX extended regular expression that matches no empty text, of
 * at most CG_REDACT_PATTERN_MAX_BYTES, without a quantifier right after another and with
 * repetition counts of at most 100 (so it compiles in bounded time and memory). Returns 0, or
 * CG_EINPUT naming the pattern and the problem, or CG_ENOMEM. */
int cg_redact_add_pattern(struct cg_redact *r, const char *pattern, struct cg_err *err);

/* A malloc'ed copy of s with every secret, token shape, pattern match and URL userinfo replaced
 * by CG_REDACT_MARK; r may be NULL (URL userinfo only). NULL when out of memory. */
char *cg_redact_apply(const struct cg_redact *r, const char *s);

/* Frees r (NULL is fine). */
void cg_redact_free(struct cg_redact *r);

/* The process-wide redactor: made from the environment on first use (NULL when memory is
 * short: then only URL userinfo is hidden). */
struct cg_redact *cg_redact_default(void);

/* Frees the process-wide redactor (at exit; tests). */
void cg_redact_default_release(void);

#endif
