/*
 * opname: demangling and family keys of op names (see opname.h for the rules).
 *
 * The family is computed in one pass over the demangled name that copies only the characters at
 * template depth 0 and stops at the parameter list. Strings are bytes; no locale. Thread-safe.
 */
#include "opname.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef char *(*demangle_fn)(const char *mangled, char *buf, size_t *len, int *status);

static demangle_fn g_demangle;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void find_demangler(void)
{
    void *sym = dlsym(RTLD_DEFAULT, "__cxa_demangle");
    if (sym == NULL) {
        void *h = dlopen("libstdc++.so.6", RTLD_NOW | RTLD_LOCAL);
        if (h != NULL)
            sym = dlsym(h, "__cxa_demangle"); /* the handle stays open for the process */
    }
    memcpy(&g_demangle, &sym, sizeof(g_demangle));
}

bool cg_opname_can_demangle(void)
{
    pthread_once(&g_once, find_demangler);
    return g_demangle != NULL;
}

char *cg_opname_demangle(const char *mangled)
{
    if (mangled == NULL || strncmp(mangled, "_Z", 2) != 0 || !cg_opname_can_demangle())
        return NULL;
    int status = -1;
    char *out = g_demangle(mangled, NULL, NULL, &status);
    if (status != 0) {
        free(out);
        return NULL;
    }
    return out;
}

static bool starts_with(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* "nccl:<collective>" from "ncclKernel_AllReduce_..." or "ncclDevKernel_AllGather_...". */
static char *nccl_family(const char *name)
{
    const char *p = strchr(name, '_');
    size_t n = 0;
    if (p == NULL)
        return strdup("nccl:other");
    p++;
    while (p[n] && p[n] != '_' && p[n] != '(' && p[n] != '<' && p[n] != ' ')
        n++;
    char *out = malloc(5 + n + 1);
    if (out == NULL)
        return NULL;
    memcpy(out, "nccl:", 5);
    memcpy(out + 5, p, n);
    out[5 + n] = '\0';
    return out;
}

static bool is_cutlass_like(const char *name)
{
    return starts_with(name, "cutlass") || starts_with(name, "cute::") ||
           strstr(name, "cutlass::") != NULL || strstr(name, "cutlass_") != NULL ||
           strstr(name, "cute::") != NULL;
}

/* Copies the name at template depth 0 (plus, when keep_first, the first top-level template
 * argument list cut at its first top-level comma) and stops at the parameter list. */
static char *strip_templates(const char *name, bool keep_first)
{
    size_t len = strlen(name);
    char *out = malloc(len + 2);
    if (out == NULL)
        return NULL;
    size_t k = 0;
    int depth = 0;
    bool kept = false, keeping = false;
    static const char anon[] = "(anonymous namespace)";
    for (size_t i = 0; i < len; i++) {
        char c = name[i];
        if (depth == 0 && c == '(' && strncmp(name + i, anon, sizeof(anon) - 1) == 0) {
            memcpy(out + k, anon, sizeof(anon) - 1);
            k += sizeof(anon) - 1;
            i += sizeof(anon) - 2;
            continue;
        }
        if (depth == 0 && c == '(')
            break; /* parameters */
        if (c == '<') {
            if (depth == 0 && keep_first && !kept) {
                keeping = true;
                kept = true;
            }
            depth++;
            if (keeping)
                out[k++] = c;
            continue;
        }
        if (c == '>') {
            if (depth > 0)
                depth--;
            if (keeping) {
                if (depth == 0) {
                    while (k > 0 && out[k - 1] == ' ')
                        k--;
                    out[k++] = '>';
                    keeping = false;
                } else {
                    out[k++] = c;
                }
            }
            continue;
        }
        if (keeping && depth == 1 && c == ',') {
            /* the first argument is complete: skip to the end of this list */
            keeping = false;
            out[k++] = '>';
            continue;
        }
        if (depth == 0 || keeping)
            out[k++] = c;
    }
    out[k] = '\0';
    /* kernels return void: drop the return type */
    if (starts_with(out, "void "))
        memmove(out, out + 5, strlen(out + 5) + 1);
    size_t n = strlen(out);
    while (n > 0 && out[n - 1] == ' ')
        out[--n] = '\0';
    return out;
}

/* "triton_poi_fused_add_0" -> "triton_poi_fused_add" */
static void strip_numeric_suffix(char *s)
{
    size_t n = strlen(s), i = n;
    while (i > 0 && s[i - 1] >= '0' && s[i - 1] <= '9')
        i--;
    if (i < n && i > 1 && s[i - 1] == '_')
        s[i - 1] = '\0';
}

char *cg_opname_family(enum cg_op_kind kind, const char *name)
{
    if (name == NULL)
        name = "";
    if (kind != CG_OP_KERNEL)
        return strdup(name);
    if (starts_with(name, "nccl") || strstr(name, " nccl") != NULL ||
        strstr(name, "::nccl") != NULL) {
        const char *p = strstr(name, "nccl");
        return nccl_family(p);
    }
    char *f = strip_templates(name, is_cutlass_like(name));
    if (f != NULL && starts_with(f, "triton"))
        strip_numeric_suffix(f);
    if (f != NULL && f[0] == '\0') {
        free(f);
        f = strdup(name);
    }
    return f;
}

bool cg_opname_is_comm(const char *family)
{
    return family != NULL && starts_with(family, "nccl:");
}
