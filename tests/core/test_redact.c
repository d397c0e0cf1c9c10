/*
 * test_redact: which environment variables count as secrets, literal values hidden longest
 * first, --redact patterns (and the ones refused), and URL userinfo hidden wherever a URL sits
 * in the text.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "redact.h"

#include <stdlib.h>
#include <string.h>

static void expect_redacted(const struct cg_redact *r, const char *in, const char *want)
{
    char *got = cg_redact_apply(r, in);
    assert_non_null(got);
    if (strcmp(got, want) != 0)
        fail_msg("'%s' became '%s', expected '%s'", in, got, want);
    free(got);
}

static void test_redact__secret_names(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        bool secret;
    } cases[] = {
        {"GITHUB_TOKEN", true},  {"HF_TOKEN", true},       {"my_api_key", true},
        {"AWS_SECRET_ACCESS_KEY", true}, {"DB_PASSWORD", true}, {"PGPASSWD", true},
        {"GOOGLE_CREDENTIALS", true}, {"PATH", false},     {"HOME", false},
        {"CANARY_GATE_STEPS", false}, {"TOKE", false},     {"", false},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        if (cg_redact_secret_name(cases[i].name, strlen(cases[i].name)) != cases[i].secret)
            fail_msg("'%s': expected %s", cases[i].name, cases[i].secret ? "secret" : "not secret");
}

static void test_redact__environment_values_longest_first(void **state)
{
    (void)state;
    char *env[] = {"GITHUB_TOKEN=ghs_abcdefgh12345678", "HF_TOKEN=ghs_abcdefgh",
                   "SHORT_KEY=1234567", /* under the minimum: ordinary text stays */
                   "PATH=/usr/bin:/bin", "SOME_PASSWORD=p@ss w0rd_with_underscore", NULL};
    struct cg_redact *r = NULL;
    struct cg_err err;
    assert_int_equal(cg_redact_new(env, &r, &err), 0);
    expect_redacted(r, "train.py --token ghs_abcdefgh12345678 --hf=ghs_abcdefgh x",
                    "train.py --token *** --hf=*** x");
    expect_redacted(r, "1234567 /usr/bin:/bin", "1234567 /usr/bin:/bin");
    expect_redacted(r, "--pw=p@ss w0rd_with_underscore!", "--pw=***!");
    expect_redacted(r, "", "");
    cg_redact_free(r);
}

static void test_redact__patterns(void **state)
{
    (void)state;
    struct cg_redact *r = NULL;
    struct cg_err err;
    assert_int_equal(cg_redact_new(NULL, &r, &err), 0);
    assert_int_equal(cg_redact_add_pattern(r, "hf_[A-Za-z0-9]+", &err), 0);
    assert_int_equal(cg_redact_add_pattern(r, "^--seed=[0-9]+$", &err), 0);
    expect_redacted(r, "a hf_abc123 and hf_XYZ9", "a *** and ***");
    expect_redacted(r, "--seed=42", "***");
    expect_redacted(r, "x --seed=42", "x --seed=42"); /* anchored: not at the start */
    assert_int_equal(cg_redact_add_pattern(r, "([a-z", &err), CG_EINPUT);
    assert_non_null(strstr(err.msg, "--redact '([a-z': not a regular expression"));
    assert_int_equal(cg_redact_add_pattern(r, "x*", &err), CG_EINPUT);
    assert_non_null(strstr(err.msg, "matches empty text"));
    /* patterns whose compilation would take unbounded memory */
    assert_int_equal(cg_redact_add_pattern(r, "sh:++++++++++++++++++++++++++++++++", &err),
                     CG_EINPUT);
    assert_non_null(strstr(err.msg, "a quantifier right after another"));
    assert_int_equal(cg_redact_add_pattern(r, "(a{1,200}){1,200}", &err), CG_EINPUT);
    assert_non_null(strstr(err.msg, "a repetition count over 100"));
    assert_int_equal(cg_redact_add_pattern(r, "[+*]+x{2,3}", &err), 0); /* quantifiers as members */
    for (int i = 3; i < CG_REDACT_MAX_PATTERNS; i++)
        assert_int_equal(cg_redact_add_pattern(r, "zz", &err), 0);
    assert_int_equal(cg_redact_add_pattern(r, "zz", &err), CG_EINPUT);
    assert_non_null(strstr(err.msg, "at most 16 patterns"));
    cg_redact_free(r);
}

static void test_redact__url_userinfo(void **state)
{
    (void)state;
    expect_redacted(NULL, "https://bob:pw@example.com/x?y=1", "https://***@example.com/x?y=1");
    expect_redacted(NULL, "--data=s3://key:secret@bucket/a and http://h/p@q",
                    "--data=s3://***@bucket/a and http://h/p@q");
    expect_redacted(NULL, "git+ssh://git@github.com:o/r.git", "git+ssh://***@github.com:o/r.git");
    expect_redacted(NULL, "a://@b c://d", "a://***@b c://d");
    expect_redacted(NULL, "no url @here ://", "no url @here ://");
}

/* Issue 37, item 12: the well-known token shapes are hidden whatever holds them (GH_PAT is no
 * secret-looking name), and ordinary words of the same beginnings stay. */
static void test_redact__token_shapes_are_hidden_by_default(void **state)
{
    (void)state;
    char *env[] = {"GH_PAT=ghp_0123456789abcdefABCDEF0123456789", "PATH=/bin", NULL};
    struct cg_redact *r = NULL;
    struct cg_err err;
    assert_int_equal(cg_redact_new(env, &r, &err), 0);
    static const struct {
        const char *in, *want;
    } cases[] = {
        {"--pat ghp_0123456789abcdefABCDEF0123456789 x", "--pat *** x"},
        {"gho_aBcDeFgHiJkLmNoPqRsTuVwXyZ012345", "***"},
        {"ghs_aBcDeFgHiJkLmNoPqRsTuVwXyZ012345:x", "***:x"},
        {"github_pat_11ABCDEFG0abcdefghijkl_mnopqrstuvwxyz0123456789", "***"},
        {"slack=xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx", "slack=***"},
        {"xoxp-1234567890-abc", "***"},
        {"https://hooks.slack.com/services/T000/B000/XXXXXXXXXXXXXXXXXXXXXXXX now",
         "https://*** now"},
        {"key AKIAIOSFODNN7EXAMPLE end", "key *** end"},
        {"ASIAY34FZKBOKMUTVV7A", "***"},
        {"load hf_AbCdEfGhIjKlMnOpQrStUvWxYz01234567 done", "load *** done"},
        /* near misses: ordinary text */
        {"ghp_short gh_0123456789abcdefABCDEF hf_model_loader hf_transformers",
         "ghp_short gh_0123456789abcdefABCDEF hf_model_loader hf_transformers"},
        {"xoxb-abc AKIA0123 https://hooks.slack.com/ akia1234567890123456",
         "xoxb-abc AKIA0123 https://hooks.slack.com/ akia1234567890123456"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        expect_redacted(r, cases[i].in, cases[i].want);
    cg_redact_free(r);
    /* the process-wide redactor has them too */
    char *got = cg_redact_apply(cg_redact_default(), "AKIAIOSFODNN7EXAMPLE");
    assert_non_null(got);
    assert_string_equal(got, "***");
    free(got);
    cg_redact_default_release();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_redact__secret_names),
        cmocka_unit_test(test_redact__environment_values_longest_first),
        cmocka_unit_test(test_redact__patterns),
        cmocka_unit_test(test_redact__url_userinfo),
        cmocka_unit_test(test_redact__token_shapes_are_hidden_by_default),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
