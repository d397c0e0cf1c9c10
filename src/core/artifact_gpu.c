/* artifact_gpu: the GPU state of runs and environments, their JSON, the peak table and MFU
 * (see artifact_gpu.h). */
#include "artifact_gpu.h"

#include "err.h"
#include "jsonutil.h"
#include "utf8.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const reason_names[CG_GPU_R_N] = {
    "gpu_idle",   "applications_clocks", "sw_power_cap",   "hw_slowdown",    "sync_boost",
    "sw_thermal", "hw_thermal",          "hw_power_brake", "display_clocks",
};

static const char *const reason_labels[CG_GPU_R_N] = {
    "idle",       "applications clocks", "SW power cap",   "HW slowdown",    "sync boost",
    "SW thermal", "HW thermal",          "HW power brake", "display clocks",
};

const char *cg_gpu_reason_name(int r)
{
    return r >= 0 && r < CG_GPU_R_N ? reason_names[r] : "unknown";
}

const char *cg_gpu_reason_label(int r)
{
    return r >= 0 && r < CG_GPU_R_N ? reason_labels[r] : "unknown";
}

bool cg_gpu_reason_external(int r)
{
    return r == CG_GPU_R_HW_SLOWDOWN || r == CG_GPU_R_SW_THERMAL || r == CG_GPU_R_HW_THERMAL ||
           r == CG_GPU_R_HW_POWER_BRAKE;
}

static void device_init(struct cg_gpu_device *d)
{
    memset(d, 0, sizeof(*d));
    d->index = d->samples = -1;
    d->sm_min_mhz = d->sm_median_mhz = d->sm_max_mhz = d->mem_median_mhz = -1;
    for (int r = 0; r < CG_GPU_R_N; r++)
        d->reasons[r] = -1;
    d->temp_min_c = d->temp_max_c = -1;
    d->power_min_w = d->power_max_w = NAN;
    d->other_samples = -1;
    d->energy_j = NAN;
}

void cg_gpu_state_init(struct cg_gpu_state *g)
{
    memset(g, 0, sizeof(*g));
    g->energy_j = g->mfu = g->peak_flops = NAN;
}

void cg_gpu_env_init(struct cg_gpu_env *e)
{
    memset(e, 0, sizeof(*e));
    e->power_limit_w = NAN;
    e->persistence_mode = e->clocks_locked = -1;
    e->app_sm_mhz = e->app_mem_mhz = e->default_app_sm_mhz = e->default_app_mem_mhz = -1;
}

void cg_gpu_state_release(struct cg_gpu_state *g)
{
    free(g->reason);
    free(g->energy_reason);
    free(g->mfu_reason);
    for (size_t i = 0; i < g->n_dev; i++) {
        free(g->dev[i].uuid);
        free(g->dev[i].energy_reason);
    }
    cg_gpu_state_init(g);
}

void cg_gpu_env_release(struct cg_gpu_env *e)
{
    free(e->reason);
    cg_gpu_env_init(e);
}

static int dup_or_null(char **dst, const char *src)
{
    *dst = NULL;
    if (src == NULL)
        return 0;
    *dst = strdup(src);
    return *dst == NULL ? CG_ENOMEM : 0;
}

int cg_gpu_state_copy(struct cg_gpu_state *dst, const struct cg_gpu_state *src)
{
    *dst = *src;
    dst->reason = dst->energy_reason = dst->mfu_reason = NULL;
    for (size_t i = 0; i < src->n_dev; i++)
        dst->dev[i].uuid = dst->dev[i].energy_reason = NULL;
    int rc = dup_or_null(&dst->reason, src->reason) |
             dup_or_null(&dst->energy_reason, src->energy_reason) |
             dup_or_null(&dst->mfu_reason, src->mfu_reason);
    for (size_t i = 0; i < src->n_dev; i++)
        rc |= dup_or_null(&dst->dev[i].uuid, src->dev[i].uuid) |
              dup_or_null(&dst->dev[i].energy_reason, src->dev[i].energy_reason);
    return rc != 0 ? CG_ENOMEM : 0;
}

int cg_gpu_env_copy(struct cg_gpu_env *dst, const struct cg_gpu_env *src)
{
    *dst = *src;
    return dup_or_null(&dst->reason, src->reason);
}

/* ---- JSON ------------------------------------------------------------------------------- */

static cJSON *inum(int64_t v)
{
    return v >= 0 ? cJSON_CreateNumber((double)v) : cJSON_CreateNull();
}

static cJSON *str(const char *s)
{
    return s != NULL ? cJSON_CreateString(s) : cJSON_CreateNull();
}

static void add(cJSON *o, const char *key, cJSON *v)
{
    cJSON_AddItemToObject(o, key, v);
}

static cJSON *device_json(const struct cg_gpu_device *d)
{
    cJSON *o = cJSON_CreateObject();
    add(o, "index", inum(d->index));
    add(o, "uuid", str(d->uuid));
    add(o, "samples", inum(d->samples));
    add(o, "sm_clock_min_mhz", inum(d->sm_min_mhz));
    add(o, "sm_clock_median_mhz", inum(d->sm_median_mhz));
    add(o, "sm_clock_max_mhz", inum(d->sm_max_mhz));
    add(o, "mem_clock_median_mhz", inum(d->mem_median_mhz));
    if (d->reasons[0] >= 0) {
        cJSON *r = cJSON_CreateObject();
        for (int k = 0; k < CG_GPU_R_N; k++)
            add(r, reason_names[k], inum(d->reasons[k]));
        add(o, "reason_samples", r);
    } else {
        add(o, "reason_samples", cJSON_CreateNull());
    }
    add(o, "temperature_min_c", inum(d->temp_min_c));
    add(o, "temperature_max_c", inum(d->temp_max_c));
    add(o, "power_min_w", cg_json_number(d->power_min_w));
    add(o, "power_max_w", cg_json_number(d->power_max_w));
    add(o, "other_process_samples", inum(d->other_samples));
    cJSON *pids = cJSON_CreateArray();
    for (size_t i = 0; i < d->n_other_pids; i++)
        cJSON_AddItemToArray(pids, cJSON_CreateNumber((double)d->other_pids[i]));
    add(o, "other_pids", pids);
    add(o, "energy_j", cg_json_number(d->energy_j));
    add(o, "energy_reason", str(d->energy_reason));
    return o;
}

cJSON *cg_gpu_state_json(const struct cg_gpu_state *g)
{
    cJSON *o = cJSON_CreateObject();
    if (o == NULL)
        return NULL;
    add(o, "available", cJSON_CreateBool(g->reason == NULL));
    add(o, "reason", str(g->reason));
    cJSON *devs = cJSON_CreateArray();
    for (size_t i = 0; i < g->n_dev; i++)
        cJSON_AddItemToArray(devs, device_json(&g->dev[i]));
    add(o, "devices", devs);
    add(o, "energy_j", cg_json_number(g->energy_j));
    add(o, "energy_reason", str(g->energy_reason));
    add(o, "mfu", cg_json_number(g->mfu));
    add(o, "peak_flops", cg_json_number(g->peak_flops));
    add(o, "mfu_reason", str(g->mfu_reason));
    return o;
}

cJSON *cg_gpu_env_json(const struct cg_gpu_env *e)
{
    cJSON *o = cJSON_CreateObject();
    if (o == NULL)
        return NULL;
    add(o, "available", cJSON_CreateBool(e->reason == NULL));
    add(o, "reason", str(e->reason));
    add(o, "power_limit_w", cg_json_number(e->power_limit_w));
    add(o, "persistence_mode",
        e->persistence_mode < 0 ? cJSON_CreateNull() : cJSON_CreateBool(e->persistence_mode));
    add(o, "applications_sm_clock_mhz", inum(e->app_sm_mhz));
    add(o, "applications_mem_clock_mhz", inum(e->app_mem_mhz));
    add(o, "default_applications_sm_clock_mhz", inum(e->default_app_sm_mhz));
    add(o, "default_applications_mem_clock_mhz", inum(e->default_app_mem_mhz));
    add(o, "clocks_locked",
        e->clocks_locked < 0 ? cJSON_CreateNull() : cJSON_CreateBool(e->clocks_locked));
    return o;
}

struct rd {
    const char *path;
    char *problem;
    size_t cap;
};

static int bad(struct rd *r, const char *key, const char *what)
{
    snprintf(r->problem, r->cap, "%s.%s: %s", r->path, key, what);
    return CG_EINPUT;
}

/* An optional whole number >= 0 (absent or null: -1). */
static int rd_int(struct rd *r, const cJSON *o, const char *key, int64_t *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    *out = -1;
    if (v == NULL || cJSON_IsNull(v))
        return 0;
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0) || v->valuedouble > 9007199254740992.0 ||
        v->valuedouble != floor(v->valuedouble))
        return bad(r, key, "must be a whole number >= 0 or null");
    *out = (int64_t)v->valuedouble;
    return 0;
}

/* An optional finite number >= 0 (absent or null: NAN). */
static int rd_num(struct rd *r, const cJSON *o, const char *key, double *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    *out = NAN;
    if (v == NULL || cJSON_IsNull(v))
        return 0;
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < 0)
        return bad(r, key, "must be a number >= 0 or null");
    *out = v->valuedouble;
    return 0;
}

static int rd_str(struct rd *r, const cJSON *o, const char *key, char **out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    *out = NULL;
    if (v == NULL || cJSON_IsNull(v))
        return 0;
    if (!cJSON_IsString(v))
        return bad(r, key, "must be a string or null");
    *out = cg_utf8_dup(v->valuestring);
    return *out == NULL ? CG_ENOMEM : 0;
}

static int rd_bool(struct rd *r, const cJSON *o, const char *key, int *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    *out = -1;
    if (v == NULL || cJSON_IsNull(v))
        return 0;
    if (!cJSON_IsBool(v))
        return bad(r, key, "must be true, false or null");
    *out = cJSON_IsTrue(v) ? 1 : 0;
    return 0;
}

static int parse_device(struct rd *r, const cJSON *o, struct cg_gpu_device *d)
{
    device_init(d);
    int64_t v;
    if (!cJSON_IsObject(o))
        return bad(r, "", "must be an object");
    int rc = rd_int(r, o, "index", &d->index) || rd_str(r, o, "uuid", &d->uuid) ||
             rd_int(r, o, "samples", &d->samples) ||
             rd_int(r, o, "sm_clock_min_mhz", &d->sm_min_mhz) ||
             rd_int(r, o, "sm_clock_median_mhz", &d->sm_median_mhz) ||
             rd_int(r, o, "sm_clock_max_mhz", &d->sm_max_mhz) ||
             rd_int(r, o, "mem_clock_median_mhz", &d->mem_median_mhz) ||
             rd_int(r, o, "temperature_min_c", &d->temp_min_c) ||
             rd_int(r, o, "temperature_max_c", &d->temp_max_c) ||
             rd_num(r, o, "power_min_w", &d->power_min_w) ||
             rd_num(r, o, "power_max_w", &d->power_max_w) ||
             rd_int(r, o, "other_process_samples", &d->other_samples) ||
             rd_num(r, o, "energy_j", &d->energy_j) ||
             rd_str(r, o, "energy_reason", &d->energy_reason);
    if (rc != 0)
        return r->problem[0] != '\0' ? CG_EINPUT : CG_ENOMEM;
    const cJSON *reasons = cJSON_GetObjectItemCaseSensitive(o, "reason_samples");
    if (reasons != NULL && !cJSON_IsNull(reasons)) {
        if (!cJSON_IsObject(reasons))
            return bad(r, "reason_samples", "must be an object or null");
        for (int k = 0; k < CG_GPU_R_N; k++) {
            if (rd_int(r, reasons, reason_names[k], &v) != 0)
                return CG_EINPUT;
            d->reasons[k] = v < 0 ? 0 : v;
        }
    }
    const cJSON *pids = cJSON_GetObjectItemCaseSensitive(o, "other_pids"), *p;
    if (pids != NULL && !cJSON_IsArray(pids))
        return bad(r, "other_pids", "must be an array of process ids");
    cJSON_ArrayForEach(p, pids)
    {
        if (!cJSON_IsNumber(p) || p->valuedouble < 0 || p->valuedouble > 4294967295.0)
            return bad(r, "other_pids", "must be an array of process ids");
        if (d->n_other_pids < CG_GPU_MAX_OTHERS)
            d->other_pids[d->n_other_pids++] = (int64_t)p->valuedouble;
    }
    return 0;
}

int cg_gpu_state_parse(const cJSON *o, const char *path, struct cg_gpu_state *g, char *problem,
                       size_t cap)
{
    struct rd r = {path, problem, cap};
    problem[0] = '\0';
    cg_gpu_state_init(g);
    if (!cJSON_IsObject(o))
        return bad(&r, "", "must be an object");
    g->recorded = true;
    if (rd_str(&r, o, "reason", &g->reason) || rd_num(&r, o, "energy_j", &g->energy_j) ||
        rd_str(&r, o, "energy_reason", &g->energy_reason) || rd_num(&r, o, "mfu", &g->mfu) ||
        rd_num(&r, o, "peak_flops", &g->peak_flops) ||
        rd_str(&r, o, "mfu_reason", &g->mfu_reason))
        return problem[0] != '\0' ? CG_EINPUT : CG_ENOMEM;
    const cJSON *devs = cJSON_GetObjectItemCaseSensitive(o, "devices"), *d;
    if (devs != NULL && !cJSON_IsArray(devs))
        return bad(&r, "devices", "must be an array");
    char dp[160];
    cJSON_ArrayForEach(d, devs)
    {
        if (g->n_dev == CG_GPU_MAX_DEVICES)
            return bad(&r, "devices", "holds more devices than a run records (8)");
        snprintf(dp, sizeof(dp), "%s.devices[%zu]", path, g->n_dev);
        struct rd rdev = {dp, problem, cap};
        int rc = parse_device(&rdev, d, &g->dev[g->n_dev++]);
        if (rc != 0)
            return rc;
    }
    return 0;
}

int cg_gpu_env_parse(const cJSON *o, const char *path, struct cg_gpu_env *e, char *problem,
                     size_t cap)
{
    struct rd r = {path, problem, cap};
    problem[0] = '\0';
    cg_gpu_env_init(e);
    if (!cJSON_IsObject(o))
        return bad(&r, "", "must be an object");
    e->recorded = true;
    if (rd_str(&r, o, "reason", &e->reason) || rd_num(&r, o, "power_limit_w", &e->power_limit_w) ||
        rd_bool(&r, o, "persistence_mode", &e->persistence_mode) ||
        rd_int(&r, o, "applications_sm_clock_mhz", &e->app_sm_mhz) ||
        rd_int(&r, o, "applications_mem_clock_mhz", &e->app_mem_mhz) ||
        rd_int(&r, o, "default_applications_sm_clock_mhz", &e->default_app_sm_mhz) ||
        rd_int(&r, o, "default_applications_mem_clock_mhz", &e->default_app_mem_mhz) ||
        rd_bool(&r, o, "clocks_locked", &e->clocks_locked))
        return problem[0] != '\0' ? CG_EINPUT : CG_ENOMEM;
    return 0;
}

/* ---- peaks and MFU ---------------------------------------------------------------------- */

/* FLOPs per SM per clock cycle, dense, by architecture: fp32 (FMA = 2 FLOPs per CUDA core),
 * tf32, bf16 (= fp16), fp8 tensor cores. Derived from the published SM designs: an Ampere
 * GA100 SM has 64 FP32 cores and tensor cores doing 1024 dense FP16 FMAs a clock; a Hopper SM
 * has 128 FP32 cores and twice Ampere's tensor rate, with FP8 at twice FP16; an Ada SM has 128
 * FP32 cores and 512 dense FP16 FMAs a clock. 0: the precision has no tensor path there. */
struct arch_rate {
    double fp32, tf32, bf16, fp8;
};
static const struct arch_rate ampere = {128, 1024, 2048, 0};
static const struct arch_rate hopper = {256, 2048, 4096, 8192};
static const struct arch_rate ada = {256, 512, 1024, 2048};

/* Models by a part of their name as NVML and CUDA spell it, first match wins, with their SM
 * counts from the vendor's specifications. */
static const struct {
    const char *name_part;
    int sms;
    const struct arch_rate *rate;
} peak_table[] = {
    {"H100 PCIe", 114, &hopper}, {"H100", 132, &hopper}, {"H200", 132, &hopper},
    {"GH200", 132, &hopper},     {"A100", 108, &ampere}, {"L40S", 142, &ada},
    {"L40", 142, &ada},          {"L4", 58, &ada},
};

bool cg_gpu_precision_valid(const char *p)
{
    return p != NULL && (strcmp(p, "fp32") == 0 || strcmp(p, "tf32") == 0 ||
                         strcmp(p, "bf16") == 0 || strcmp(p, "fp16") == 0 ||
                         strcmp(p, "fp8") == 0);
}

double cg_gpu_peak_flop_per_clock(const char *model, const char *precision)
{
    if (model == NULL || !cg_gpu_precision_valid(precision))
        return NAN;
    for (size_t i = 0; i < sizeof(peak_table) / sizeof(peak_table[0]); i++) {
        if (strstr(model, peak_table[i].name_part) == NULL)
            continue;
        const struct arch_rate *a = peak_table[i].rate;
        double per_sm = strcmp(precision, "fp32") == 0   ? a->fp32
                        : strcmp(precision, "tf32") == 0 ? a->tf32
                        : strcmp(precision, "fp8") == 0  ? a->fp8
                                                         : a->bf16;
        return per_sm > 0 ? per_sm * peak_table[i].sms : NAN;
    }
    return NAN;
}

double cg_gpu_mfu(double flops_per_token, double tokens_per_sec, double flop_per_clock,
                  double sm_mhz, size_t gpus)
{
    double peak = flop_per_clock * sm_mhz * 1e6 * (double)gpus;
    if (!(flops_per_token > 0) || !(tokens_per_sec > 0) || !(peak > 0) || !isfinite(peak))
        return NAN;
    return flops_per_token * tokens_per_sec / peak;
}
