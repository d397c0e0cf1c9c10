/*
 * httpd: a real HTTP/1.1 server on 127.0.0.1 for tests, running in its own pthread.
 *
 * The port is chosen free at start (bind to port 0), so test programs can run in parallel. It
 * answers one connection at a time and closes each connection after its answer. Two sources of
 * answers, in order:
 *   1. a queue of canned responses (status, header lines, body, optional delay) that tests push;
 *   2. a small emulation of the GitHub REST API for one repository and pull request: listing
 *      issue comments with per_page/page and Link headers pointing back at this server, creating
 *      and updating comments (a body over 65,536 UTF-16 code units, the stricter of the ways
 *      GitHub may count its limit, is refused with GitHub's 422 "body is too long"), commit
 *      statuses, and check runs (listed by commit and check_name, paged as comments are, created
 *      and updated); requests without the configured token get 401.
 * Every request is logged (method, target, header block, body) for tests to assert on.
 * All functions are thread-safe with respect to the server thread. Tests only: aborts on
 * allocation failure.
 */
#ifndef CG_TEST_HTTPD_H
#define CG_TEST_HTTPD_H

#include <stddef.h>

struct cg_httpd;

struct cg_httpd_request {
    char method[16];
    char *target;  /* path and query, e.g. "/repos/o/r/issues/1/comments?per_page=100" */
    char *headers; /* the header block as received, lines ending in "\r\n" */
    char *body;    /* NUL-terminated; body_len bytes */
    size_t body_len;
};

/* Starts a server on a free port. Returns NULL (with a message on stderr) on failure. */
struct cg_httpd *cg_httpd_start(void);

/* Stops the thread and frees everything, requests included. NULL is fine. */
void cg_httpd_stop(struct cg_httpd *s);

/* "http://127.0.0.1:PORT", owned by the server. */
const char *cg_httpd_url(const struct cg_httpd *s);

/* Queues a canned response. headers: "Name: value\r\n" lines, or NULL. body may be NULL. The
 * response is sent after delay_ms. */
void cg_httpd_push(struct cg_httpd *s, int status, const char *headers, const char *body);
void cg_httpd_push_delayed(struct cg_httpd *s, long delay_ms, int status, const char *headers,
                           const char *body);

/* Number of requests received so far. */
size_t cg_httpd_count(struct cg_httpd *s);

/* Request i (0-based), valid until cg_httpd_stop; NULL when out of range. */
const struct cg_httpd_request *cg_httpd_request(struct cg_httpd *s, size_t i);

/* Copies the value of header name (any case) of r into out; returns out, or NULL when absent. */
const char *cg_httpd_header(const struct cg_httpd_request *r, const char *name, char *out,
                            size_t size);

/* Configures the GitHub emulation: repository "owner/name", pull request number, the token
 * that must come as "Authorization: Bearer <token>" (NULL: none checked) and the largest page
 * the server gives whatever per_page asks (like GitHub's own cap of 100). */
void cg_httpd_github(struct cg_httpd *s, const char *repo, long pr, const char *token,
                     int max_per_page);

/* Adds a comment to the emulated pull request, by the Actions bot as the gate's are; returns its
 * id. */
long long cg_httpd_add_comment(struct cg_httpd *s, const char *body);

/* The same by a user of that login ("type": "User"): anyone who can comment. */
long long cg_httpd_add_comment_by(struct cg_httpd *s, const char *body, const char *login);

/* The login GET /user answers (a personal token's; its comments are by it), or NULL: 403, as
 * GitHub answers an Actions token. Comments created through the API are by it, else the bot. */
void cg_httpd_token_user(struct cg_httpd *s, const char *login);

/* Number of comments on the emulated pull request. */
size_t cg_httpd_comment_count(struct cg_httpd *s);

/* Copies the body of comment i (0-based, in creation order) into a malloc'ed string (caller
 * frees), or returns NULL. *id receives its id when id is not NULL. */
char *cg_httpd_comment(struct cg_httpd *s, size_t i, long long *id);

/* Number of commit statuses posted, and a malloc'ed copy of status i as
 * "<sha> <request body>" (caller frees), or NULL. */
size_t cg_httpd_status_count(struct cg_httpd *s);
char *cg_httpd_status(struct cg_httpd *s, size_t i);

/* Adds a check run (completed, success) on sha, as another app or an earlier run would have;
 * external_id may be NULL. Returns its id. */
long long cg_httpd_add_check_run(struct cg_httpd *s, const char *sha, const char *name,
                                 const char *external_id);

/* Number of check runs, and check run i (in creation order) as the JSON GitHub would show: the
 * last request's fields with id, head_sha, name, external_id and html_url (malloc'ed, caller
 * frees; *id its id when id is not NULL), or NULL. */
size_t cg_httpd_check_run_count(struct cg_httpd *s);
char *cg_httpd_check_run(struct cg_httpd *s, size_t i, long long *id);

#endif
