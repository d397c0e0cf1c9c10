/*
 * nvtx_steps: the steps, ops and counts the NVTX hooks (nvtx.c) feed.
 *
 * A range of the default domain whose name is the step name (CANARY_GATE_STEP_RANGE, "step") is a
 * step; its integer payload is the step's token count. With a fallback name
 * (CANARY_GATE_STEP_FALLBACK: the optimizer steps canary-gate's sitecustomize marks, for
 * --steps-from auto) the first of the two names a process begins marks its steps and ranges of
 * the other are ignored; the shard says which ("steps_from nvtx|optimizer"). But the step name
 * begun while every step the fallback began is a warm-up step (an optimizer step made before the
 * training loop) takes over: the fallback's running step is dropped (its end, on whatever thread,
 * writes and counts nothing), its index reused, and the shard says so (a second "steps_from" line
 * and a warning); after that the step name is ignored, with a warning. Every other range that
 * begins while a step of the measured window (warm-up..warm-up + CANARY_GATE_STEPS) is open, on any
 * thread, is an op of kind "range" ("<domain>:<name>" outside the default domain). Step ends are
 * appended to the shard at once, with the op totals that changed; the end of the window's last step
 * calls cg_inject_measured ("done N"). The op table holds CG_OPS_MAX / 4 * 3 names; ranges of
 * further names are not timed (once the table is full, a new name is turned away without a lock),
 * and the distinct names left out are counted for a "w op table full" line.
 *
 * Steps come from one thread: the thread that begins the process's first step (the training loop,
 * in every canary seen). A range named as a step that another thread begins, or that begins while
 * a step is open (nested in it, or a start/end step begun before the last one ended), is no step:
 * it is counted, neither timed nor an op, and the shard says so once per kind ("w 'step' ranges
 * ...") and with the totals so far ("ss NESTED OTHER_THREADS", at step ends and at exit), so that
 * a side thread's short "step" ranges never stand for the training loop's.
 *
 * Ranges per step ("n I ranges DELTA"): by the same rule, a range other than a step that begins
 * while a step is open, on any thread, is counted in the step most recently begun, for every step
 * before the window's end (warm-up included; past the end nothing is counted), whether or not its
 * name found room in the op table; so over the measured steps the ranges counted are the range
 * ops' calls, but for ranges still open (an op's call is counted when it ends) and ranges of names
 * the op table turned away. The counts live in chunks of CG_RANGE_CHUNK steps allocated when a
 * step of a new chunk begins (the hot path: one atomic add); they are written at every step end
 * (the steps since the last write, the one before included for a range that raced its begin),
 * and for every step at the window's end and at exit.
 *
 * Trace (CANARY_GATE_TRACE_STEPS): from the start of the first traced step to the end of the
 * last, every range that begins is written when it ends ("tr TID START END DOMAIN NAME", a "td"
 * line naming each domain once), within the trace's event cap. Without a trace the cost is one
 * predictable branch per range.
 *
 * Threading: push/pop nesting is per thread (a thread-local stack, separate per domain); start/end
 * ranges live in a global slot table and may end on another thread. A pop or end without a
 * matching range returns an error value and changes nothing. The hot path takes no lock: one
 * clock read per step or op range, a string compare, and lock-free op lookup. Only the takeover
 * and the fallback's steps that it could drop (warm-up steps, with a fallback name) take a lock
 * of their own (g_takeover_lock), so that a fallback step ending or beginning on one thread while
 * the step name takes over on another is either dropped whole or ends whole. Times in ns.
 */
#include "nvtx_internal.h"

#include <pthread.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define CG_STACK_MAX 64
#define CG_OPS_MAX 4096 /* power of two; at most 3/4 used */
#define CG_SE_SLOTS 1024
#define CG_UNRECORDED_MAX 4096 /* power of two; distinct names left out, at most 3/4 counted */
#define CG_RANGE_CHUNK 4096 /* steps per chunk of range counts */
#define CG_RANGE_CHUNKS ((CG_MAX_STEP_INDEX + CG_RANGE_CHUNK - 1) / CG_RANGE_CHUNK)

/* FRAME_DROPPABLE: a step of the fallback name begun while the step name may take over from it
 * (own_takes_over); its end is decided under g_takeover_lock. */
enum { FRAME_STEP = 1, FRAME_DROPPABLE = 2 };

struct frame {
    uint64_t start_ns;
    const void *domain; /* NULL: the default domain */
    int64_t step;       /* step index when FRAME_STEP */
    int64_t tokens;     /* -1 when the step had no integer payload */
    int32_t op;         /* op index, -1 when not timed as an op */
    int32_t flags;
    int32_t traced;     /* name index in the trace names + 1, 0 when not traced */
    int32_t tid;        /* the thread that began it, when traced */
};

struct tstack {
    int depth;
    int overflow;   /* pushes beyond CG_STACK_MAX: counted, not recorded */
    uint32_t after; /* the op of the last timed range this thread ended since it last began a
                     * step, + 1 (0: none), for cg_nvtx_place */
    struct frame f[CG_STACK_MAX];
};

struct op {
    _Atomic uint64_t hash; /* 0: empty slot */
    char *name;
    _Atomic int64_t calls;
    _Atomic int64_t total_ns;
    int64_t written_calls; /* guarded by the shard writer lock */
    int64_t written_ns;
};

/* Interned names: lock-free lookup, locked insert, at most 3/4 full. The range ops (with their
 * totals) are one table; the names of traced ranges another, so a trace never takes op slots. */
struct name_table {
    struct op slot[CG_OPS_MAX];
    int32_t order[CG_OPS_MAX]; /* slots in insertion order */
    _Atomic int32_t n;
    pthread_mutex_t lock;
    bool count_unrecorded; /* names it cannot take are counted (note_unrecorded): the ops only */
};

struct se_slot {
    struct frame f;
    uint32_t gen;
    bool used;
};

/* The ranges begun in one step, and what the shard has of them. */
struct range_count {
    _Atomic int64_t n;
    int64_t written; /* guarded by the shard writer lock */
};

static _Thread_local struct tstack t_stack;
/* The stack of the thread that began the latest step (compared, never read through), and that
 * thread's place, published by it at every push and pop (cg_nvtx_place's fallback). */
static struct tstack *_Atomic g_step_stack;
static _Atomic uint32_t g_step_place;

bool nvtx_on;
static const char *g_step_name;
static const char *g_step_fallback; /* "" when none */
static _Atomic int g_step_source;   /* 0 until a step begins; 1: g_step_name's, 2: the fallback's */
static int64_t g_warmup;
static int64_t g_measure_end = INT64_MAX;
static _Atomic uint64_t g_unrecorded[CG_UNRECORDED_MAX]; /* hashes of the names left out */
static _Atomic int32_t g_n_unrecorded;
static _Atomic int32_t g_unrecorded_written;
static _Atomic int64_t g_next_step;
_Atomic int64_t nvtx_cur_step = -1;
static _Atomic int g_open_steps; /* never below 0: open_steps_less */
/* The takeover (own_takes_over) and what it must see whole: the begin and the end of a fallback
 * step while the step name may still take over (FRAME_DROPPABLE; warm-up steps only, so the lock
 * is never taken in the measured window, nor in a process without a fallback name). Under it,
 * g_fallback_open: the index + 1 of the droppable fallback step open, 0 when none. Taken before
 * the shard writer's lock, never inside it; held across fork (nvtx_steps_config). */
static pthread_mutex_t g_takeover_lock = PTHREAD_MUTEX_INITIALIZER;
static int64_t g_fallback_open;
/* The thread whose steps are measured (its stack; NULL until the first step), and the step
 * ranges that were no steps: nested in an open step, or begun by another thread. */
static struct tstack *_Atomic g_steps_thread;
static _Atomic int64_t g_stray_nested, g_stray_other;
static int64_t g_stray_written[2]; /* writer lock */

static struct name_table g_ops = {.lock = PTHREAD_MUTEX_INITIALIZER, .count_unrecorded = true};
static struct name_table g_trace_names = {.lock = PTHREAD_MUTEX_INITIALIZER};

static int64_t g_trace_first = -1, g_trace_last = -1;
static _Atomic int g_trace_state; /* 0 before the traced steps, 1 during, 2 after */
static _Atomic int32_t g_next_domain_id;
static _Thread_local int32_t t_tid;

/* Range counts by step: chunk[step / CG_RANGE_CHUNK][step % CG_RANGE_CHUNK], chunks made (under
 * g_range_lock) before a step of theirs is the current one; g_ranges_from: the first step the
 * next step end's write looks at (writer lock); g_ranges_lost: a chunk could not be made. */
static struct range_count *_Atomic g_ranges[CG_RANGE_CHUNKS];
static pthread_mutex_t g_range_lock = PTHREAD_MUTEX_INITIALIZER;
static int64_t g_ranges_from;
static _Atomic bool g_ranges_lost;
static bool g_ranges_lost_written; /* writer lock */

static struct se_slot g_se[CG_SE_SLOTS];
static uint32_t g_se_next;
static pthread_mutex_t g_se_lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t fnv1a(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ull;
    }
    return h | 1; /* never 0, the empty-slot mark */
}

static int32_t name_insert(struct name_table *t, const char *key, uint64_t h)
{
    int32_t found = -1;
    pthread_mutex_lock(&t->lock);
    for (uint32_t i = (uint32_t)h & (CG_OPS_MAX - 1), n = 0; n < CG_OPS_MAX;
         i = (i + 1) & (CG_OPS_MAX - 1), n++) {
        uint64_t cur = atomic_load_explicit(&t->slot[i].hash, memory_order_acquire);
        if (cur == h && strcmp(t->slot[i].name, key) == 0) {
            found = (int32_t)i;
            break;
        }
        if (cur != 0)
            continue;
        int32_t used = atomic_load_explicit(&t->n, memory_order_relaxed);
        if (used >= CG_OPS_MAX / 4 * 3)
            break;
        char *copy = strdup(key);
        if (copy == NULL)
            break;
        t->slot[i].name = copy;
        atomic_store_explicit(&t->slot[i].hash, h, memory_order_release);
        t->order[used] = (int32_t)i;
        atomic_store_explicit(&t->n, used + 1, memory_order_release);
        found = (int32_t)i;
        break;
    }
    pthread_mutex_unlock(&t->lock);
    return found;
}

/* Counts a name the op table could not take, once per distinct name (by its hash; lock-free).
 * Past 3/4 of CG_UNRECORDED_MAX distinct names the count stops growing. */
static void note_unrecorded(uint64_t h)
{
    for (uint32_t i = (uint32_t)h & (CG_UNRECORDED_MAX - 1), n = 0; n < CG_UNRECORDED_MAX;
         i = (i + 1) & (CG_UNRECORDED_MAX - 1), n++) {
        uint64_t cur = atomic_load_explicit(&g_unrecorded[i], memory_order_relaxed);
        if (cur == h)
            return;
        if (cur != 0)
            continue;
        if (atomic_load_explicit(&g_n_unrecorded, memory_order_relaxed) >=
            CG_UNRECORDED_MAX / 4 * 3)
            return;
        uint64_t expected = 0;
        if (atomic_compare_exchange_strong(&g_unrecorded[i], &expected, h)) {
            atomic_fetch_add_explicit(&g_n_unrecorded, 1, memory_order_relaxed);
            return;
        }
        if (expected == h)
            return;
    }
}

/* "w" once per kind of step range that was no step, and "ss NESTED OTHER" when the totals
 * changed. Writer locked. */
static void write_stray(void)
{
    int64_t n[2] = {atomic_load_explicit(&g_stray_nested, memory_order_relaxed),
                    atomic_load_explicit(&g_stray_other, memory_order_relaxed)};
    if (n[0] == g_stray_written[0] && n[1] == g_stray_written[1])
        return;
    if (n[0] > 0 && g_stray_written[0] == 0) {
        cg_inject_append(CG_SHARD_KEY_WARNING " '");
        cg_inject_append_name(g_step_name);
        cg_inject_append("' ranges nested in a step: counted, never measured as steps\n");
    }
    if (n[1] > 0 && g_stray_written[1] == 0) {
        cg_inject_append(CG_SHARD_KEY_WARNING " '");
        cg_inject_append_name(g_step_name);
        cg_inject_append("' ranges on threads other than the first step's: counted, never "
                         "measured as steps\n");
    }
    cg_inject_append(CG_SHARD_KEY_STRAY_STEPS " %lld %lld\n", (long long)n[0], (long long)n[1]);
    g_stray_written[0] = n[0];
    g_stray_written[1] = n[1];
}

void cg_nvtx_write_warnings(void)
{
    write_stray();
    if (atomic_load_explicit(&g_ranges_lost, memory_order_relaxed) && !g_ranges_lost_written) {
        g_ranges_lost_written = true;
        cg_inject_append(CG_SHARD_KEY_WARNING " out of memory: NVTX ranges not counted in some "
                                              "steps\n");
    }
    int32_t n = atomic_load_explicit(&g_n_unrecorded, memory_order_relaxed);
    if (n == 0 || n == atomic_load_explicit(&g_unrecorded_written, memory_order_relaxed))
        return;
    atomic_store_explicit(&g_unrecorded_written, n, memory_order_relaxed);
    cg_inject_append(CG_SHARD_KEY_WARNING " op table full: %d %s names not recorded\n", (int)n,
                     n >= CG_UNRECORDED_MAX / 4 * 3 ? "or more" : "more");
}

/* The slot of "<domain>:<name>" (or name in the default domain), inserted when new; -1 when
 * the table is full (counted when the table counts unrecorded names). A new name meeting a full
 * table fails without the table's lock. */
static int32_t name_lookup(struct name_table *t, const struct cg_domain *d, const char *name)
{
    char key[CG_KEY_MAX];
    const char *k = name;
    if (d != NULL) {
        int n = snprintf(key, sizeof(key), "%s:%s", d->name, name);
        if (n < 0)
            return -1;
        k = key; /* a longer name is cut at CG_KEY_MAX - 1 bytes */
    }
    uint64_t h = fnv1a(k);
    int32_t got = -1;
    for (uint32_t i = (uint32_t)h & (CG_OPS_MAX - 1), n = 0; n < CG_OPS_MAX;
         i = (i + 1) & (CG_OPS_MAX - 1), n++) {
        uint64_t cur = atomic_load_explicit(&t->slot[i].hash, memory_order_acquire);
        if (cur == 0) {
            if (atomic_load_explicit(&t->n, memory_order_acquire) < CG_OPS_MAX / 4 * 3) {
                got = name_insert(t, k, h);
                break;
            }
            /* Full: every insert is visible now and none follows, so the name is absent unless
             * it was just inserted into this very slot. */
            cur = atomic_load_explicit(&t->slot[i].hash, memory_order_acquire);
            if (cur == 0)
                break;
        }
        if (cur == h && strcmp(t->slot[i].name, k) == 0)
            return (int32_t)i;
    }
    if (got < 0 && t->count_unrecorded)
        note_unrecorded(h);
    return got;
}

void cg_nvtx_write_ops(void)
{
    int32_t n = atomic_load_explicit(&g_ops.n, memory_order_acquire);
    for (int32_t j = 0; j < n; j++) {
        struct op *o = &g_ops.slot[g_ops.order[j]];
        int64_t c = atomic_load_explicit(&o->calls, memory_order_relaxed);
        int64_t t = atomic_load_explicit(&o->total_ns, memory_order_relaxed);
        if (c == o->written_calls && t == o->written_ns)
            continue;
        cg_inject_append(CG_SHARD_KEY_OP " " CG_SHARD_KIND_RANGE " %lld %lld ",
                         (long long)(c - o->written_calls), (long long)(t - o->written_ns));
        cg_inject_append_name(o->name);
        cg_inject_append("\n");
        o->written_calls = c;
        o->written_ns = t;
    }
}

/* A range begins inside the trace: its name interned, its thread and start time kept. */
static void trace_begin(struct frame *f, const struct cg_domain *d, const char *name)
{
    int32_t i = name_lookup(&g_trace_names, d, name);
    if (i < 0) {
        cg_inject_trace_dropped(1); /* more distinct names than the table holds */
        return;
    }
    if (t_tid == 0)
        t_tid = (int32_t)syscall(SYS_gettid);
    f->traced = i + 1;
    f->tid = t_tid;
    if (!(f->flags & FRAME_STEP) && f->op < 0)
        f->start_ns = cg_inject_now_ns();
}

/* A traced range ended: one "tr" line (and a "td" line the first time its domain shows). */
static void trace_end(const struct frame *f, uint64_t end_ns)
{
    if (!cg_inject_trace_take())
        return;
    struct cg_domain *d = (struct cg_domain *)(uintptr_t)f->domain; /* the library's own */
    const char *key = g_trace_names.slot[f->traced - 1].name;
    int32_t dom = 0;
    cg_inject_lock(); /* also orders the domain ids */
    if (d != NULL) {
        size_t dn = strlen(d->name);
        if (strncmp(key, d->name, dn) == 0 && key[dn] == ':')
            key += dn + 1; /* the name without its "<domain>:" */
        dom = atomic_load_explicit(&d->trace_id, memory_order_relaxed);
        if (dom == 0) {
            dom = atomic_fetch_add_explicit(&g_next_domain_id, 1, memory_order_relaxed) + 1;
            atomic_store_explicit(&d->trace_id, dom, memory_order_relaxed);
            cg_inject_append(CG_SHARD_KEY_TRACE_DOMAIN " %d ", (int)dom);
            cg_inject_append_name(d->name);
            cg_inject_append("\n");
        }
    }
    cg_inject_append(CG_SHARD_KEY_TRACE_RANGE " %d %llu %llu %d ", (int)f->tid,
                     (unsigned long long)f->start_ns, (unsigned long long)end_ns, (int)dom);
    cg_inject_append_name(key);
    cg_inject_append("\n");
    cg_inject_unlock();
}

/* True for the steps of the measured window, whose ops count. */
static bool measured_step(int64_t step)
{
    return step >= g_warmup && step < g_measure_end;
}

static int64_t g_toggle_block; /* CANARY_GATE_OVERHEAD_TOGGLE, 0: none */

/* Whether step lies in an off block of the overhead toggle (on off off on ...). */
static bool toggled_off(int64_t step)
{
    if (g_toggle_block <= 0 || !measured_step(step))
        return false;
    int64_t b = ((step - g_warmup) / g_toggle_block) % 4;
    return b == 1 || b == 2;
}

bool cg_nvtx_work_off(void)
{
    return g_toggle_block > 0 &&
           toggled_off(atomic_load_explicit(&nvtx_cur_step, memory_order_relaxed));
}

/* True for the steps whose ranges are counted: every step before the window's end (within the
 * step indices a shard holds). */
static bool range_step(int64_t step)
{
    return step >= 0 && step < g_measure_end && step < CG_MAX_STEP_INDEX;
}

/* Makes the chunk of step's range counts (step begins: before it is the current step). */
static void range_chunk(int64_t step)
{
    if (!range_step(step) ||
        atomic_load_explicit(&g_ranges[step / CG_RANGE_CHUNK], memory_order_acquire) != NULL)
        return;
    pthread_mutex_lock(&g_range_lock);
    if (atomic_load_explicit(&g_ranges[step / CG_RANGE_CHUNK], memory_order_relaxed) == NULL) {
        struct range_count *c = calloc(CG_RANGE_CHUNK, sizeof(*c));
        if (c != NULL)
            atomic_store_explicit(&g_ranges[step / CG_RANGE_CHUNK], c, memory_order_release);
        else
            atomic_store_explicit(&g_ranges_lost, true, memory_order_relaxed);
    }
    pthread_mutex_unlock(&g_range_lock);
}

/* A range begun in step (the current one). */
static void range_count(int64_t step)
{
    if (!range_step(step))
        return;
    struct range_count *c =
        atomic_load_explicit(&g_ranges[step / CG_RANGE_CHUNK], memory_order_acquire);
    if (c != NULL)
        atomic_fetch_add_explicit(&c[step % CG_RANGE_CHUNK].n, 1, memory_order_relaxed);
}

static atomic_bool g_work_counted; /* the "nc" line of the work counts written */

void nvtx_work_mark(const char *message)
{
    if (!nvtx_on)
        return;
    if (strcmp(message, CG_MARK_OPTIMIZER_HOOKED) == 0) {
        if (atomic_exchange_explicit(&g_work_counted, true, memory_order_relaxed))
            return;
        cg_inject_lock();
        cg_inject_append(CG_SHARD_KEY_COUNTED " " CG_SHARD_COUNT_BACKWARD
                                              " " CG_SHARD_COUNT_OPTIMIZER_STEPS "\n");
        cg_inject_unlock();
        return;
    }
    const char *count = strcmp(message, CG_MARK_BACKWARD) == 0 ? CG_SHARD_COUNT_BACKWARD
                        : strcmp(message, CG_MARK_OPTIMIZER_STEP) == 0
                            ? CG_SHARD_COUNT_OPTIMIZER_STEPS
                            : NULL;
    if (count == NULL || atomic_load_explicit(&g_open_steps, memory_order_relaxed) <= 0)
        return;
    int64_t step = atomic_load_explicit(&nvtx_cur_step, memory_order_acquire);
    if (!range_step(step))
        return;
    cg_inject_lock();
    cg_inject_append(CG_SHARD_KEY_COUNT " %lld %s 1\n", (long long)step, count);
    cg_inject_unlock();
}

void cg_nvtx_write_counts(bool all)
{
    int64_t last = atomic_load_explicit(&g_next_step, memory_order_relaxed) - 1;
    if (last >= g_measure_end)
        last = g_measure_end - 1;
    if (last >= CG_MAX_STEP_INDEX)
        last = CG_MAX_STEP_INDEX - 1;
    for (int64_t k = all ? 0 : g_ranges_from; k <= last; k++) {
        struct range_count *chunk =
            atomic_load_explicit(&g_ranges[k / CG_RANGE_CHUNK], memory_order_acquire);
        if (chunk == NULL) {
            k += CG_RANGE_CHUNK - 1 - k % CG_RANGE_CHUNK; /* none of its steps began */
            continue;
        }
        struct range_count *c = &chunk[k % CG_RANGE_CHUNK];
        int64_t n = atomic_load_explicit(&c->n, memory_order_relaxed);
        if (n == c->written)
            continue;
        cg_inject_append(CG_SHARD_KEY_COUNT " %lld " CG_SHARD_COUNT_RANGES " %lld\n", (long long)k,
                         (long long)(n - c->written));
        c->written = n;
    }
    if (!all && last > g_ranges_from)
        g_ranges_from = last; /* earlier steps change no more, but for a range racing a begin */
}

/* Writes where the steps come from (cg_inject_lock held): "steps_from optimizer" for the name
 * CG_OPTIMIZER_STEP_RANGE, else "steps_from nvtx". */
static void write_steps_from(const char *name)
{
    cg_inject_append(CG_SHARD_KEY_STEPS_FROM " %s\n", strcmp(name, CG_OPTIMIZER_STEP_RANGE) == 0
                                                          ? CG_SHARD_STEPS_OPTIMIZER
                                                          : CG_SHARD_STEPS_NVTX);
}

/* Writes the start of a warning about the step name begun after the fallback's steps
 * (cg_inject_lock held): "w the canary's own 'NAME' ranges began after ". */
static void own_steps_warning(void)
{
    cg_inject_append(CG_SHARD_KEY_WARNING " the canary's own '");
    cg_inject_append_name(g_step_name);
    cg_inject_append("' ranges began after ");
}

/* One step fewer open, never below 0. */
static void open_steps_less(void)
{
    int n = atomic_load_explicit(&g_open_steps, memory_order_relaxed);
    while (n > 0 && !atomic_compare_exchange_weak_explicit(
                        &g_open_steps, &n, n - 1, memory_order_relaxed, memory_order_relaxed))
        ;
}

/* The step name begins after the fallback's steps (a script's own step ranges after one optimizer
 * step made before its loop, to materialise the optimizer's state): while every step the
 * fallback began is a warm-up step, the step name takes over: the fallback's running step is
 * dropped (its end writes nothing: step_close) and its index reused, and the steps thread is
 * chosen again. Once the fallback has begun a measured step the step name is ignored. Either is
 * said in the shard (the takeover with a second "steps_from" line, which the reader takes as the
 * last word). The decision and the drop are made under g_takeover_lock, as are the begin and end
 * of every fallback step that could be dropped, so the fallback's thread ending or beginning a
 * step meanwhile sees the takeover whole or not at all. True when the step name now marks the
 * steps. */
static bool own_takes_over(void)
{
    static _Atomic bool ignored_said;
    pthread_mutex_lock(&g_takeover_lock);
    int64_t begun = atomic_load_explicit(&g_next_step, memory_order_relaxed);
    bool takes =
        begun <= g_warmup && atomic_load_explicit(&g_step_source, memory_order_relaxed) == 2;
    if (takes) {
        atomic_store_explicit(&g_step_source, 1, memory_order_relaxed);
        if (g_fallback_open > 0) {
            atomic_store_explicit(&g_next_step, g_fallback_open - 1, memory_order_relaxed);
            g_fallback_open = 0;
            open_steps_less();
        }
        atomic_store_explicit(&g_steps_thread, NULL, memory_order_relaxed);
    }
    bool own = atomic_load_explicit(&g_step_source, memory_order_relaxed) == 1;
    pthread_mutex_unlock(&g_takeover_lock);
    if (takes) {
        cg_inject_lock();
        write_steps_from(g_step_name);
        own_steps_warning();
        if (strcmp(g_step_fallback, CG_OPTIMIZER_STEP_RANGE) == 0) {
            cg_inject_append("%lld optimizer step%s", (long long)begun, begun == 1 ? "" : "s");
        } else {
            cg_inject_append("%lld '", (long long)begun);
            cg_inject_append_name(g_step_fallback);
            cg_inject_append("' range%s", begun == 1 ? "" : "s");
        }
        cg_inject_append(", %s: they mark the steps\n",
                         begun == 1 ? "a warm-up step" : "warm-up steps");
        cg_inject_unlock();
        return true;
    }
    if (own)
        return true; /* another thread's range took over just now */
    if (!atomic_exchange_explicit(&ignored_said, true, memory_order_relaxed)) {
        cg_inject_lock();
        own_steps_warning();
        if (strcmp(g_step_fallback, CG_OPTIMIZER_STEP_RANGE) == 0) {
            cg_inject_append("the optimizer's measured steps: ignored, the optimizer's steps are "
                             "measured (--steps-from nvtx measures the canary's own)\n");
        } else {
            cg_inject_append("the '");
            cg_inject_append_name(g_step_fallback);
            cg_inject_append("' ranges' measured steps: ignored, those mark the steps\n");
        }
        cg_inject_append(CG_SHARD_KEY_STEPS_IGNORED " %lld\n", (long long)begun);
        cg_inject_unlock();
    }
    return false;
}

/* 1 when a range of the default domain named name marks a step, 2 when the fallback marks one,
 * -1 when it is the step name that lost (ignored), else 0. Of the step name and the fallback,
 * the first begun wins for the process, but for the step name begun while the fallback's steps
 * are all warm-up (own_takes_over); the winner is written (write_steps_from). */
static int step_kind(const char *name)
{
    int want = strcmp(name, g_step_name) == 0                              ? 1
               : g_step_fallback[0] != '\0' && strcmp(name, g_step_fallback) == 0 ? 2
                                                                           : 0;
    if (want == 0)
        return 0;
    int was = atomic_load_explicit(&g_step_source, memory_order_relaxed);
    if (was == 0 && atomic_compare_exchange_strong_explicit(
                        &g_step_source, &was, want, memory_order_relaxed, memory_order_relaxed)) {
        cg_inject_lock();
        write_steps_from(name);
        cg_inject_unlock();
        return want;
    }
    if (was == want)
        return want;
    if (want == 1 && was == 2)
        return own_takes_over() ? 1 : -1;
    return -1;
}

static inline struct tstack *this_stack(void);

/* A range named as a step begins on the calling thread: true when it is a step (the thread of
 * the first step, with no step open), else false, counted as nested or of another thread. */
static bool steps_thread(void)
{
    struct tstack *s = this_stack();
    struct tstack *owner = atomic_load_explicit(&g_steps_thread, memory_order_relaxed);
    if (owner == NULL && atomic_compare_exchange_strong_explicit(&g_steps_thread, &owner, s,
                                                                 memory_order_relaxed,
                                                                 memory_order_relaxed))
        owner = s; /* else owner is the thread whose first step won */
    if (owner != s) {
        atomic_fetch_add_explicit(&g_stray_other, 1, memory_order_relaxed);
        return false;
    }
    if (atomic_load_explicit(&g_open_steps, memory_order_relaxed) > 0) {
        atomic_fetch_add_explicit(&g_stray_nested, 1, memory_order_relaxed);
        return false;
    }
    return true;
}

/* A step begins in f: its index, its range counts' chunk, the step most recently begun, and the
 * trace from the first traced step on. */
static void begin_step(struct frame *f, int64_t tokens)
{
    f->flags = FRAME_STEP;
    f->tokens = tokens;
    f->step = atomic_fetch_add_explicit(&g_next_step, 1, memory_order_relaxed);
    range_chunk(f->step); /* published with the step (release): range_count finds it */
    atomic_store_explicit(&nvtx_cur_step, f->step, memory_order_release);
    atomic_fetch_add_explicit(&g_open_steps, 1, memory_order_relaxed);
    f->start_ns = cg_gpu_step_begin(f->step);
    if (f->step == g_trace_first)
        atomic_store_explicit(&g_trace_state, 1, memory_order_relaxed);
}

/* A range of the fallback name begins while the step name may still take over (the fallback's
 * steps so far are all warm-up): a step (FRAME_DROPPABLE) unless the takeover came first or it is
 * no step (steps_thread), decided under g_takeover_lock. False when it is no step. */
static bool begin_droppable(struct frame *f, int64_t tokens)
{
    pthread_mutex_lock(&g_takeover_lock);
    bool step = atomic_load_explicit(&g_step_source, memory_order_relaxed) == 2 && steps_thread();
    if (step) {
        begin_step(f, tokens);
        f->flags |= FRAME_DROPPABLE;
        g_fallback_open = f->step + 1;
    }
    pthread_mutex_unlock(&g_takeover_lock);
    return step;
}

/* A step's frame ends or is lost (its start/end range found no slot): true when the step is
 * still its own to end, with one step fewer open; false for a fallback step the step name took
 * over from (own_takes_over dropped it and gave its open count back). */
static bool step_close(const struct frame *f)
{
    if (!(f->flags & FRAME_DROPPABLE)) {
        open_steps_less();
        return true;
    }
    pthread_mutex_lock(&g_takeover_lock);
    bool mine = g_fallback_open == f->step + 1;
    if (mine) {
        g_fallback_open = 0;
        open_steps_less();
    }
    pthread_mutex_unlock(&g_takeover_lock);
    return mine;
}

static void begin_range(struct frame *f, const struct cg_domain *d, const char *name,
                        int64_t tokens)
{
    f->domain = d;
    f->flags = 0;
    f->op = -1;
    f->traced = 0;
    if (!nvtx_on)
        return;
    int kind = d == NULL ? step_kind(name) : 0;
    if (kind < 0)
        return; /* the step name that lost: neither a step nor an op */
    if (kind == 2 && atomic_load_explicit(&g_next_step, memory_order_relaxed) <= g_warmup) {
        if (!begin_droppable(f, tokens))
            return; /* taken over, or no step (counted): neither timed nor an op */
    } else if (kind > 0) {
        if (!steps_thread())
            return; /* no step: counted (steps_thread), neither timed nor an op */
        begin_step(f, tokens);
    } else if (atomic_load_explicit(&g_open_steps, memory_order_relaxed) > 0) {
        int64_t step = atomic_load_explicit(&nvtx_cur_step, memory_order_acquire);
        range_count(step);
        if (measured_step(step) && !(g_toggle_block > 0 && toggled_off(step))) {
            f->op = name_lookup(&g_ops, d, name);
            if (f->op >= 0)
                f->start_ns = cg_inject_now_ns();
        }
    }
    if (atomic_load_explicit(&g_trace_state, memory_order_relaxed) == 1)
        trace_begin(f, d, name);
}

static void end_range(const struct frame *f)
{
    uint64_t end = 0;
    if ((f->flags & FRAME_STEP) && !step_close(f))
        return; /* the fallback's step the step name took over from (own_takes_over): dropped */
    if (f->op >= 0) {
        end = cg_inject_now_ns();
        int64_t dt = (int64_t)(end - f->start_ns);
        atomic_fetch_add_explicit(&g_ops.slot[f->op].calls, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&g_ops.slot[f->op].total_ns, dt, memory_order_relaxed);
    } else if (f->flags & FRAME_STEP) {
        end = cg_gpu_step_end(f->step);
        cg_inject_lock();
        cg_inject_append(CG_SHARD_KEY_STEP " %lld %llu %llu %lld\n", (long long)f->step,
                         (unsigned long long)f->start_ns, (unsigned long long)end,
                         (long long)f->tokens);
        cg_nvtx_write_ops();
        cg_nvtx_write_counts(false);
        write_stray();
        cg_inject_unlock();
    }
    if (f->traced)
        trace_end(f, end != 0 ? end : cg_inject_now_ns());
    if ((f->flags & FRAME_STEP) && f->step == g_trace_last) {
        atomic_store_explicit(&g_trace_state, 2, memory_order_relaxed);
        cg_inject_lock();
        cg_inject_append_trace_counts(); /* kept even if the canary dies later */
        cg_inject_unlock();
    }
    if ((f->flags & FRAME_STEP) && g_measure_end != INT64_MAX && f->step == g_measure_end - 1)
        cg_inject_measured(); /* once per process: it keeps its own flag */
}

/* --- push/pop ----------------------------------------------------------------------------- */

/* The calling thread's stack. The address of a thread-local variable of a library loaded with
 * dlopen costs a __tls_get_addr call, which the compiler would rather repeat than keep in a
 * register (three calls in a pop): the empty asm makes the address a value it cannot recompute,
 * so push and pop pay for one call each. */
static inline struct tstack *this_stack(void)
{
    struct tstack *s = &t_stack;
    __asm__("" : "+r"(s));
    return s;
}

/* The innermost timed range open in the thread's step, as a place; 0 when none. */
static uint32_t stack_in(const struct tstack *s)
{
    for (int i = s->depth - 1; i >= 0 && !(s->f[i].flags & FRAME_STEP); i--)
        if (s->f[i].op >= 0)
            return CG_PLACE_IN | ((uint32_t)s->f[i].op + 1);
    return 0;
}

/* The place of the thread whose stack is s, by its own ranges (see cg_nvtx_place). */
static uint32_t stack_place(const struct tstack *s)
{
    uint32_t in = stack_in(s);
    if (in != 0)
        return in;
    return s->after != 0 ? CG_PLACE_AFTER | s->after : 0;
}

/* After s changed: its place published when it is the thread that began the latest step. */
static inline void publish_place(const struct tstack *s)
{
    if (atomic_load_explicit(&g_step_stack, memory_order_relaxed) == s)
        atomic_store_explicit(&g_step_place, stack_place(s), memory_order_relaxed);
}

/* The thread of stack s began a step: from now on its place is the fallback. */
static void step_thread(struct tstack *s)
{
    s->after = 0;
    atomic_store_explicit(&g_step_stack, s, memory_order_relaxed);
}

int nvtx_push(const struct cg_domain *d, const char *name, int64_t tokens)
{
    struct tstack *s = this_stack();
    if (s->depth >= CG_STACK_MAX) {
        s->overflow++;
        return s->depth + s->overflow - 1;
    }
    begin_range(&s->f[s->depth], d, name, tokens);
    if (s->f[s->depth].flags & FRAME_STEP)
        step_thread(s);
    int depth = s->depth++;
    publish_place(s);
    return depth;
}

int nvtx_pop(const struct cg_domain *d)
{
    struct tstack *s = this_stack();
    if (s->overflow > 0) {
        s->overflow--;
        return s->depth + s->overflow;
    }
    for (int i = s->depth - 1; i >= 0; i--) {
        if (s->f[i].domain != d)
            continue;
        struct frame f = s->f[i];
        if (i + 1 < s->depth)
            memmove(&s->f[i], &s->f[i + 1], (size_t)(s->depth - i - 1) * sizeof(s->f[0]));
        s->depth--;
        end_range(&f);
        if (f.op >= 0)
            s->after = (uint32_t)f.op + 1;
        publish_place(s);
        return i;
    }
    return -1; /* unbalanced pop: nothing to end */
}

uint32_t cg_nvtx_place(void)
{
    const struct tstack *s = this_stack();
    if (atomic_load_explicit(&g_step_stack, memory_order_relaxed) == s)
        return stack_place(s);
    /* Another thread: a range it has open; else where the step's thread is. What it last
     * closed never places its calls: on PyTorch's autograd thread, working for the step thread's
     * "backward", that is a library's own range (a CUB scan's), and it may be a step old. */
    uint32_t place = stack_in(s);
    return place != 0 ? place : atomic_load_explicit(&g_step_place, memory_order_relaxed);
}

const char *cg_nvtx_place_name(uint32_t place)
{
    uint32_t op = (place & CG_PLACE_OP) - 1;
    if ((place & CG_PLACE_OP) == 0 || op >= CG_OPS_MAX ||
        atomic_load_explicit(&g_ops.slot[op].hash, memory_order_acquire) == 0)
        return NULL;
    return g_ops.slot[op].name;
}

/* --- start/end ---------------------------------------------------------------------------- */

uint64_t nvtx_start(const struct cg_domain *d, const char *name, int64_t tokens)
{
    struct frame f;
    begin_range(&f, d, name, tokens);
    if (f.flags & FRAME_STEP) { /* the thread began a step (cg_nvtx_place) */
        struct tstack *s = this_stack();
        step_thread(s);
        publish_place(s);
    }
    uint64_t id = 0;
    pthread_mutex_lock(&g_se_lock);
    for (uint32_t n = 0; n < CG_SE_SLOTS; n++) {
        uint32_t i = (g_se_next + n) % CG_SE_SLOTS;
        if (g_se[i].used)
            continue;
        g_se[i].used = true;
        g_se[i].gen++;
        g_se[i].f = f;
        g_se_next = i + 1;
        id = ((uint64_t)g_se[i].gen << 32) | (uint64_t)(i + 1);
        break;
    }
    pthread_mutex_unlock(&g_se_lock);
    if (id == 0 && (f.flags & FRAME_STEP)) /* no slot: the step can never end */
        step_close(&f);
    return id;
}

void nvtx_end(uint64_t id)
{
    uint32_t slot = (uint32_t)(id & 0xffffffffu);
    uint32_t gen = (uint32_t)(id >> 32);
    struct frame f;
    bool found = false;
    if (slot == 0 || slot > CG_SE_SLOTS)
        return;
    pthread_mutex_lock(&g_se_lock);
    if (g_se[slot - 1].used && g_se[slot - 1].gen == gen) {
        f = g_se[slot - 1].f;
        g_se[slot - 1].used = false;
        found = true;
    }
    pthread_mutex_unlock(&g_se_lock);
    if (found)
        end_range(&f);
}

/* --- configuration -------------------------------------------------------------------------- */

/* The takeover lock is held across fork, as the shard writer's is (core.c): a child never
 * inherits it held by a thread it does not have. */
static void takeover_lock(void)
{
    pthread_mutex_lock(&g_takeover_lock);
}

static void takeover_unlock(void)
{
    pthread_mutex_unlock(&g_takeover_lock);
}

static void takeover_at_fork(void)
{
    pthread_atfork(takeover_lock, takeover_unlock, takeover_unlock);
}

void nvtx_steps_config(const struct cg_inject_config *cfg)
{
    static pthread_once_t at_fork_once = PTHREAD_ONCE_INIT;
    if (cfg->step_fallback[0] != '\0')
        pthread_once(&at_fork_once, takeover_at_fork);
    g_step_name = cfg->step_range;
    g_step_fallback = cfg->step_fallback;
    g_warmup = cfg->warmup;
    g_measure_end = cfg->measure_end;
    g_trace_first = cfg->trace_first;
    g_trace_last = cfg->trace_last;
    g_toggle_block = cfg->toggle_block;
}
