/*
 * github_api: the request plumbing that github.c and checkrun.c share (inside src/github only):
 * one call with GitHub's answers turned into one-line messages, the API's base URL, the
 * same-origin rule for pagination links, and GitHub's ids. Not thread-safe, as github.h.
 */
#ifndef CG_GITHUB_API_H
#define CG_GITHUB_API_H

#include "buf.h"
#include "err.h"
#include "github.h"
#include "http.h"

#include <cjson/cJSON.h>

/* Sends one request (once: never repeated, for creates). Returns 0 for a 2xx answer or a dry
 * run, else CG_ENET/CG_ENOMEM with "<what>: <why>" (missing names what a 404 did not find);
 * the token never appears in the message. resp holds the answer. */
int cg_github_call(struct cg_github *gh, const char *method, const char *url, const char *body,
                   int once, struct cg_http_response *resp, const char *what,
                   const char *missing, struct cg_err *err);

/* Appends the API's base URL (no trailing slash) to url. Returns 0 or CG_ENOMEM. */
int cg_github_api_base(const struct cg_github *gh, struct cg_buf *url);

/* Is url on the API's own origin (scheme, host and port)? A token follows no other link. */
int cg_github_same_origin(const char *api, const char *url);

/* Is v a whole JSON number from 1 to 2^53, as GitHub's ids are? */
int cg_github_json_id(const cJSON *v);

/* Is gh's client a dry run (nothing is sent)? */
int cg_github_is_dry(const struct cg_github *gh);

#endif
