#ifndef CG_THRESHOLDS_H
#define CG_THRESHOLDS_H
struct cg_builtin_thresholds {
    const char *name;
    const char *json;
};
extern const struct cg_builtin_thresholds cg_builtin_thresholds[];
#endif
