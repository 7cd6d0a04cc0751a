/* The compiled core of memplace's packing: the compiler heuristics' first/best fit over
 * an offset index, and the canonical-packing search kernel.
 *
 * A C port of the Numba kernels beside it (heuristics.py + offset_index.py for
 * `heuristic_offsets` / `place_in_order`, search.py for `search`), which stay as the
 * reference: the tests hold both to the same offsets, status and node counts. The
 * reasoning behind every rule is in those modules' docstrings; comments here only
 * say where the port differs. It exists so that `memplace pack` starts like a binary:
 * nothing is compiled at run time. Arrays arrive through the buffer protocol
 * (contiguous int64, e.g. numpy arrays); outputs are written into caller buffers, so
 * the module needs neither numpy's headers nor ctypes.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int64_t i64;
typedef uint64_t u64;

enum { PACKED = 0, INFEASIBLE = 1, NODE_LIMIT = 2, TIME_LIMIT = 3, STOPPED = 4, NO_MEMORY = 5 };

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);  /* what time.perf_counter reads on Linux */
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static inline i64 round_up(i64 x, i64 a) { return ((x + a - 1) / a) * a; }
static inline i64 imax(i64 a, i64 b) { return a > b ? a : b; }
static inline i64 imin(i64 a, i64 b) { return a < b ? a : b; }

/* ------------------------------------------------------------------------------------ */
/* Heuristics: first fit / best fit in a priority order over an offset index (one level) */

typedef struct {
    i64 span_lo, span_hi, leaves;
    i64 *head, *count, *next;       /* segment tree of lists (2*leaves), next per buffer */
    i64 *wide_lo, *wide_hi, n_wide; /* union of buffers alive over the whole span */
    i64 *foot_lo, *foot_hi, n_foot; /* union of every placed buffer */
    i64 *found, *found_lo, *found_hi, *stack;
} OffsetIndex;

static void index_free(OffsetIndex *ix) {
    free(ix->head); free(ix->count); free(ix->next);
    free(ix->wide_lo); free(ix->wide_hi); free(ix->foot_lo); free(ix->foot_hi);
    free(ix->found); free(ix->found_lo); free(ix->found_hi); free(ix->stack);
}

static int index_init(OffsetIndex *ix, i64 n_steps, i64 n, i64 span_lo, i64 span_hi) {
    memset(ix, 0, sizeof *ix);
    i64 leaves = 1;
    while (leaves < n_steps) leaves *= 2;
    ix->span_lo = span_lo; ix->span_hi = span_hi; ix->leaves = leaves;
    ix->head = malloc(sizeof(i64) * 2 * leaves);
    ix->count = calloc(2 * leaves, sizeof(i64));
    ix->next = malloc(sizeof(i64) * (n + 1));
    ix->wide_lo = malloc(sizeof(i64) * (n + 1)); ix->wide_hi = malloc(sizeof(i64) * (n + 1));
    ix->foot_lo = malloc(sizeof(i64) * (n + 1)); ix->foot_hi = malloc(sizeof(i64) * (n + 1));
    ix->found = malloc(sizeof(i64) * (n + 1));
    ix->found_lo = malloc(sizeof(i64) * 2 * (n + 1));
    ix->found_hi = malloc(sizeof(i64) * (n + 1));
    ix->stack = malloc(sizeof(i64) * 3 * 192);
    if (!ix->head || !ix->count || !ix->next || !ix->wide_lo || !ix->wide_hi || !ix->foot_lo ||
        !ix->foot_hi || !ix->found || !ix->found_lo || !ix->found_hi || !ix->stack) {
        index_free(ix);
        return -1;
    }
    for (i64 k = 0; k < 2 * leaves; k++) ix->head[k] = -1;
    for (i64 k = 0; k <= n; k++) ix->next[k] = -1;
    return 0;
}

/* first index k in [0, m) with v[k] >= x (numpy searchsorted, side left) */
static i64 lower_bound(const i64 *v, i64 m, i64 x) {
    i64 lo = 0, hi = m;
    while (lo < hi) { i64 mid = (lo + hi) / 2; if (v[mid] < x) lo = mid + 1; else hi = mid; }
    return lo;
}

/* first index k in [0, m) with v[k] > x (side right) */
static i64 upper_bound(const i64 *v, i64 m, i64 x) {
    i64 lo = 0, hi = m;
    while (lo < hi) { i64 mid = (lo + hi) / 2; if (v[mid] <= x) lo = mid + 1; else hi = mid; }
    return lo;
}

static void union_add(i64 *lo, i64 *hi, i64 *n, i64 a, i64 b) {
    i64 m = *n;
    i64 i = lower_bound(hi, m, a);
    i64 j = upper_bound(lo, m, b);
    if (i == j) {
        memmove(lo + i + 1, lo + i, sizeof(i64) * (m - i));
        memmove(hi + i + 1, hi + i, sizeof(i64) * (m - i));
        lo[i] = a; hi[i] = b; *n = m + 1;
        return;
    }
    i64 new_lo = a < lo[i] ? a : lo[i];
    i64 new_hi = b > hi[j - 1] ? b : hi[j - 1];
    lo[i] = new_lo; hi[i] = new_hi;
    i64 gone = j - i - 1;
    if (gone) {
        memmove(lo + i + 1, lo + i + 1 + gone, sizeof(i64) * (m - gone - i - 1));
        memmove(hi + i + 1, hi + i + 1 + gone, sizeof(i64) * (m - gone - i - 1));
        *n = m - gone;
    }
}

static i64 overlapping(OffsetIndex *ix, i64 s, i64 e, const i64 *start, const i64 *end) {
    i64 *node = ix->stack, *node_lo = ix->stack + 192, *node_hi = ix->stack + 384;
    node[0] = 1; node_lo[0] = 0; node_hi[0] = ix->leaves - 1;
    i64 depth = 1, c = 0;
    while (depth > 0) {
        depth--;
        i64 p = node[depth], lo = node_lo[depth], hi = node_hi[depth];
        if (ix->count[p] == 0 || hi < s || e < lo) continue;
        int inside = s <= lo && hi <= e;
        for (i64 u = ix->head[p]; u >= 0; u = ix->next[u])
            if (inside || (start[u] <= e && s <= end[u])) ix->found[c++] = u;
        if (lo < hi) {
            i64 mid = (lo + hi) / 2;
            node[depth] = 2 * p; node_lo[depth] = lo; node_hi[depth] = mid;
            node[depth + 1] = 2 * p + 1; node_lo[depth + 1] = mid + 1; node_hi[depth + 1] = hi;
            depth += 2;
        }
    }
    return c;
}

static void index_add(OffsetIndex *ix, i64 t, i64 s, i64 e, i64 offset, i64 nbytes) {
    if (s <= ix->span_lo && e >= ix->span_hi) {
        union_add(ix->wide_lo, ix->wide_hi, &ix->n_wide, offset, offset + nbytes);
    } else {
        i64 a = s + ix->leaves, b = e + ix->leaves;
        while (a != b) { a >>= 1; b >>= 1; }
        ix->next[t] = ix->head[a];
        ix->head[a] = t;
        while (a >= 1) { ix->count[a]++; a >>= 1; }
    }
    union_add(ix->foot_lo, ix->foot_hi, &ix->n_foot, offset, offset + nbytes);
}

static int cmp_pair(const void *x, const void *y) {
    const i64 *a = x, *b = y;
    return (a[0] > b[0]) - (a[0] < b[0]);
}

static i64 index_fit(OffsetIndex *ix, i64 s, i64 e, i64 need, i64 alignment, i64 capacity,
                     int best_fit, const i64 *start, const i64 *end, const i64 *offsets,
                     const i64 *size) {
    const i64 *other_lo, *other_hi;
    i64 n_other, c = 0;
    i64 *pairs = ix->found_lo;  /* (lo, hi) pairs, sorted by lo */
    if (s <= ix->span_lo && e >= ix->span_hi) {
        other_lo = ix->foot_lo; other_hi = ix->foot_hi; n_other = ix->n_foot;
    } else {
        other_lo = ix->wide_lo; other_hi = ix->wide_hi; n_other = ix->n_wide;
        c = overlapping(ix, s, e, start, end);
        for (i64 i = 0; i < c; i++) {
            i64 u = ix->found[i];
            pairs[2 * i] = offsets[u];
            pairs[2 * i + 1] = offsets[u] + size[u];
        }
        qsort(pairs, (size_t)c, 2 * sizeof(i64), cmp_pair);
    }
    i64 best = -1, best_gap = 0, cursor = 0, i = 0, j = 0;
    while (i < c || j < n_other) {
        i64 a, b;
        if (j >= n_other || (i < c && pairs[2 * i] <= other_lo[j])) {
            a = pairs[2 * i]; b = pairs[2 * i + 1]; i++;
        } else {
            a = other_lo[j]; b = other_hi[j]; j++;
        }
        i64 at = round_up(cursor, alignment);
        if (at + need <= a) {
            if (!best_fit) return at + need <= capacity ? at : -1;
            if (best < 0 || a - cursor < best_gap) { best = at; best_gap = a - cursor; }
        }
        if (b > cursor) cursor = b;
    }
    i64 at = round_up(cursor, alignment);
    if (at + need <= capacity && (best < 0 || capacity - cursor < best_gap)) best = at;
    return best;
}

static int cmp_i64(const void *x, const void *y) {
    i64 a = *(const i64 *)x, b = *(const i64 *)y;
    return (a > b) - (a < b);
}

/* ------------------------------------------------------------------------------------ */
/* The union tree: where first/best fit puts a buffer, in time independent of how many    */
/* placed buffers overlap it.                                                             */
/*
 * The offset index above returns every placed buffer that overlaps the query and sorts
 * them: its work is the number of overlapping pairs, which on a compiler trace of 10^5
 * buffers with long-lived ones (gradients alive to the end, activations saved for the
 * backward pass) runs to 10^9. Only the union of their address ranges matters, so here
 * each buffer is filed under the O(log T) nodes of a segment tree over time steps whose
 * ranges its lifespan covers (`cover`), and every node also keeps the union of the
 * ranges filed at or below it (`sub`), both as sorted disjoint ranges (union_add; a
 * zero-size buffer is a point that splits a gap, as in the sorted scan). The buffers
 * overlapping steps [s, e] are those filed at or under the canonical nodes of [s, e]
 * (their `sub`) or above them (the ancestors' `cover`): at most 4 log T lists. First
 * fit walks their gaps together from offset 0 without merging them and stops at the
 * first that fits; best fit, which looks at every gap, sorts their ranges (far fewer
 * than the overlapping buffers: unions coalesce) and scans them once. The gaps, their widths
 * and the choice among them are those of the sorted scan (index_fit), except that a gap
 * is taken only if the buffer ends within the capacity (the same whenever every placed
 * buffer does, as in place_in_order; place_around may hold fixed buffers above it).
 * A new buffer of size 0 still asks the offset index (kept beside it only when some
 * buffer has size 0): it may sit where a range starts, and under best fit the gaps of
 * width 0 between touching ranges, which the unions merge away, can decide it.
 */

typedef struct { i64 *lo, *hi, n, cap; } Ranges;

typedef struct {
    i64 leaves;
    Ranges *cover, *sub;
    i64 *stamp, clock;      /* per node: last query/insert that visited it */
    i64 *nodes;             /* canonical nodes of one interval */
    Ranges **lists;         /* the lists of one query */
    i64 *pairs, pairs_cap;  /* their ranges, sorted for best fit */
} UnionTree;

static void ut_free(UnionTree *T) {
    if (T->cover) for (i64 k = 0; k < 2 * T->leaves; k++) { free(T->cover[k].lo); free(T->cover[k].hi); }
    if (T->sub) for (i64 k = 0; k < 2 * T->leaves; k++) { free(T->sub[k].lo); free(T->sub[k].hi); }
    free(T->cover); free(T->sub); free(T->stamp); free(T->nodes); free(T->lists);
    free(T->pairs);
}

static int ut_init(UnionTree *T, i64 n_steps) {
    memset(T, 0, sizeof *T);
    i64 leaves = 1;
    while (leaves < n_steps) leaves *= 2;
    T->leaves = leaves;
    T->cover = calloc(2 * leaves, sizeof(Ranges));
    T->sub = calloc(2 * leaves, sizeof(Ranges));
    T->stamp = calloc(2 * leaves, sizeof(i64));
    T->nodes = malloc(sizeof(i64) * 160);
    T->lists = malloc(sizeof(Ranges *) * 640);
    if (!T->cover || !T->sub || !T->stamp || !T->nodes || !T->lists) { ut_free(T); return -1; }
    return 0;
}

static int ranges_add(Ranges *R, i64 a, i64 b) {
    if (R->n + 1 > R->cap) {
        i64 cap = R->cap ? 2 * R->cap : 4;
        i64 *lo = realloc(R->lo, sizeof(i64) * cap);
        if (!lo) return -1;
        R->lo = lo;
        i64 *hi = realloc(R->hi, sizeof(i64) * cap);
        if (!hi) return -1;
        R->hi = hi; R->cap = cap;
    }
    union_add(R->lo, R->hi, &R->n, a, b);
    return 0;
}

/* the canonical nodes of leaves [s, e] into T->nodes; their count */
static i64 ut_canonical(UnionTree *T, i64 s, i64 e) {
    i64 c = 0, l = s + T->leaves, r = e + T->leaves + 1;
    while (l < r) {
        if (l & 1) T->nodes[c++] = l++;
        if (r & 1) T->nodes[c++] = --r;
        l >>= 1; r >>= 1;
    }
    return c;
}

static int ut_add(UnionTree *T, i64 s, i64 e, i64 a, i64 b) {
    i64 c = ut_canonical(T, s, e);
    i64 clock = ++T->clock;
    for (i64 k = 0; k < c; k++) {
        if (ranges_add(&T->cover[T->nodes[k]], a, b)) return -1;
        for (i64 x = T->nodes[k]; x >= 1 && T->stamp[x] != clock; x >>= 1) {
            T->stamp[x] = clock;
            if (ranges_add(&T->sub[x], a, b)) return -1;
        }
    }
    return 0;
}

/* first k with R->lo[k] > x */
static inline i64 first_above(const Ranges *R, i64 x) { return upper_bound(R->lo, R->n, x); }

static i64 ut_fit(UnionTree *T, i64 s, i64 e, i64 need, i64 alignment, i64 capacity,
                  int best_fit) {
    i64 c = ut_canonical(T, s, e), k = 0;
    i64 clock = ++T->clock;
    for (i64 j = 0; j < c; j++) {
        i64 q = T->nodes[j];
        if (T->sub[q].n) T->lists[k++] = &T->sub[q];
        for (i64 x = q >> 1; x >= 1 && T->stamp[x] != clock; x >>= 1) {
            T->stamp[x] = clock;
            if (T->cover[x].n) T->lists[k++] = &T->cover[x];
        }
    }
    if (best_fit) {
        /* best fit looks at every gap: sort the ranges once and scan them in one pass (as
           index_fit); first fit stops at the first gap that fits, walked below */
        i64 total = 0;
        for (i64 j = 0; j < k; j++) total += T->lists[j]->n;
        if (total > T->pairs_cap) {
            i64 cap = 2 * total;
            i64 *p = realloc(T->pairs, sizeof(i64) * 2 * cap);
            if (!p) return -2;
            T->pairs = p; T->pairs_cap = cap;
        }
        i64 c2 = 0;
        for (i64 j = 0; j < k; j++)
            for (i64 i = 0; i < T->lists[j]->n; i++) {
                T->pairs[2 * c2] = T->lists[j]->lo[i];
                T->pairs[2 * c2 + 1] = T->lists[j]->hi[i];
                c2++;
            }
        qsort(T->pairs, (size_t)c2, 2 * sizeof(i64), cmp_pair);
        i64 best = -1, best_gap = 0, cursor = 0;
        for (i64 i = 0; i <= c2; i++) {
            int top = i == c2;
            i64 a = top ? capacity : T->pairs[2 * i];
            i64 at = round_up(cursor, alignment);
            if (at + need > capacity) return best;
            if (at + need <= a) {
                if (!best_fit) return at;
                if (best < 0 || a - cursor < best_gap) { best = at; best_gap = a - cursor; }
            }
            if (!top && T->pairs[2 * i + 1] > cursor) cursor = T->pairs[2 * i + 1];
        }
        return best;
    }
    i64 best = -1, best_gap = 0, x = 0;
    for (;;) {
        /* step over every range that holds x (lo <= x < hi), in every list */
        int moved = 1;
        while (moved) {
            moved = 0;
            for (i64 j = 0; j < k; j++) {
                const Ranges *R = T->lists[j];
                i64 i = first_above(R, x) - 1;
                if (i >= 0 && R->hi[i] > x) { x = R->hi[i]; moved = 1; }
            }
        }
        i64 end = INT64_MAX;  /* the next obstacle above x: the gap is [x, end) */
        for (i64 j = 0; j < k; j++) {
            const Ranges *R = T->lists[j];
            i64 i = first_above(R, x);
            if (i < R->n && R->lo[i] < end) end = R->lo[i];
        }
        int top = end == INT64_MAX;
        if (top) end = capacity;
        i64 at = round_up(x, alignment);
        if (at + need > capacity) return best;  /* every later gap starts higher */
        if (at + need <= end) {
            if (!best_fit) return at;
            if (best < 0 || end - x < best_gap) { best = at; best_gap = end - x; }
        }
        if (top) return best;
        x = end;
    }
}

/* offsets[b] for buffers placed in `order`; -1 = did not fit. Returns -1 on no memory. */
/* `keep`: the buffers whose offsets[] is already >= 0 stay where they are (placed first);
   the others start at -1 (place_around). Without `keep` every offset starts at -1. */
static int place_core(const i64 *order, i64 n_order, i64 n, const i64 *sizes,
                      const i64 *lowers, const i64 *uppers, const i64 *aligns,
                      i64 capacity, int best_fit, i64 *offsets, int keep, double deadline) {
    for (i64 k = 0; k < n; k++) if (!keep || offsets[k] < 0) offsets[k] = -1;
    if (n == 0) return 0;
    i64 *points = malloc(sizeof(i64) * 2 * n);
    i64 *first = malloc(sizeof(i64) * n), *last = malloc(sizeof(i64) * n);
    if (!points || !first || !last) { free(points); free(first); free(last); return -1; }
    memcpy(points, lowers, sizeof(i64) * n);
    memcpy(points + n, uppers, sizeof(i64) * n);
    qsort(points, (size_t)(2 * n), sizeof(i64), cmp_i64);
    i64 m = 0;
    for (i64 k = 0; k < 2 * n; k++)
        if (m == 0 || points[k] != points[m - 1]) points[m++] = points[k];
    i64 span_lo = INT64_MAX, span_hi = INT64_MIN;
    for (i64 k = 0; k < n; k++) {
        first[k] = lower_bound(points, m, lowers[k]);
        last[k] = lower_bound(points, m, uppers[k]) - 1;
        span_lo = imin(span_lo, first[k]);
        span_hi = imax(span_hi, last[k]);
    }
    int zero = 0;  /* a buffer of size 0 asks the offset index */
    for (i64 k = 0; k < n && !zero; k++) zero = sizes[k] == 0;
    OffsetIndex ix;
    UnionTree T;
    if (zero && index_init(&ix, span_hi + 1, n, span_lo, span_hi)) {
        free(points); free(first); free(last); return -1;
    }
    int rc = ut_init(&T, span_hi + 1);
    for (i64 b = 0; !rc && keep && b < n; b++)
        if (offsets[b] >= 0) {
            if (zero) index_add(&ix, b, first[b], last[b], offsets[b], sizes[b]);
            rc = ut_add(&T, first[b], last[b], offsets[b], offsets[b] + sizes[b]);
        }
    for (i64 k = 0; !rc && k < n_order; k++) {
        i64 b = order[k];
        if (deadline >= 0 && (k & 255) == 0 && now_s() > deadline) break;  /* the rest: -1 */
        if (keep && offsets[b] >= 0) continue;  /* fixed */
        i64 at = zero && sizes[b] == 0 ?
            index_fit(&ix, first[b], last[b], 0, aligns[b], capacity, best_fit, first, last,
                      offsets, sizes) :
            ut_fit(&T, first[b], last[b], sizes[b], aligns[b], capacity, best_fit);
        if (at == -2) { rc = -1; break; }
        if (at < 0) continue;
        offsets[b] = at;
        if (zero) index_add(&ix, b, first[b], last[b], at, sizes[b]);
        rc = ut_add(&T, first[b], last[b], at, at + sizes[b]);
    }
    if (zero) index_free(&ix);
    ut_free(&T);
    free(points); free(first); free(last);
    return rc ? -1 : 0;
}

static int place_in_order_c(const i64 *order, i64 n_order, i64 n, const i64 *sizes,
                            const i64 *lowers, const i64 *uppers, const i64 *aligns,
                            i64 capacity, int best_fit, i64 *offsets) {
    return place_core(order, n_order, n, sizes, lowers, uppers, aligns, capacity, best_fit,
                      offsets, 0, -1.0);
}

/* buffers by decreasing primary, then decreasing secondary, then increasing index */
static const i64 *g_primary, *g_secondary;
static int cmp_order(const void *x, const void *y) {
    i64 a = *(const i64 *)x, b = *(const i64 *)y;
    if (g_primary[a] != g_primary[b]) return g_primary[a] > g_primary[b] ? -1 : 1;
    if (g_secondary[a] != g_secondary[b]) return g_secondary[a] > g_secondary[b] ? -1 : 1;
    return (a > b) - (a < b);
}

static int heuristic_c(i64 n, const i64 *sizes, const i64 *lowers, const i64 *uppers,
                       const i64 *aligns, i64 capacity, int which, i64 *offsets,
                       double deadline) {
    i64 *order = malloc(sizeof(i64) * (n + 1)), *lengths = malloc(sizeof(i64) * (n + 1));
    i64 *counts = NULL;
    if (!order || !lengths) { free(order); free(lengths); return -1; }
    for (i64 k = 0; k < n; k++) { order[k] = k; lengths[k] = uppers[k] - lowers[k]; }
    if (which == 1) { g_primary = lengths; g_secondary = sizes; }
    else if (which == 3) {
        /* conflicts: every other buffer but those ending at or before the start and those
           starting at or after the end */
        i64 *ends = malloc(sizeof(i64) * (n + 1)), *starts = malloc(sizeof(i64) * (n + 1));
        counts = malloc(sizeof(i64) * (n + 1));
        if (!ends || !starts || !counts) {
            free(ends); free(starts); free(counts); free(order); free(lengths); return -1;
        }
        memcpy(ends, uppers, sizeof(i64) * n);
        memcpy(starts, lowers, sizeof(i64) * n);
        qsort(ends, (size_t)n, sizeof(i64), cmp_i64);
        qsort(starts, (size_t)n, sizeof(i64), cmp_i64);
        for (i64 i = 0; i < n; i++) {
            i64 before = upper_bound(ends, n, lowers[i]);
            i64 after = n - lower_bound(starts, n, uppers[i]);
            counts[i] = n - 1 - before - after;
        }
        free(ends); free(starts);
        g_primary = counts; g_secondary = sizes;
    } else { g_primary = sizes; g_secondary = lengths; }
    qsort(order, (size_t)n, sizeof(i64), cmp_order);
    int rc = place_core(order, n, n, sizes, lowers, uppers, aligns, capacity, which < 2,
                        offsets, 0, deadline);
    free(order); free(lengths); free(counts);
    return rc;
}

/* ------------------------------------------------------------------------------------ */
/* The canonical-packing search (search.py)                                             */

static inline u64 mix(u64 x) {
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
    return x ^ (x >> 31);
}

static u64 state_hash(u64 zob, u64 salt, const i64 *floor_, i64 slo, i64 shi) {
    u64 h = zob ^ mix((u64)slo * 1000003ULL + (u64)shi + salt);
    for (i64 s = slo; s < shi; s++) h = mix(h ^ ((u64)floor_[s] + salt));
    return h;
}

typedef struct {
    i64 n;
    const i64 *sizes, *alignments, *sec_lo, *sec_hi, *adj_ptr, *adj, *sec_ptr, *sec_members,
        *twin_prev;
    i64 capacity;
    i64 *rank; /* tie-break rank of each buffer, 1..n (0 reserved: a fresh group's threshold) */
    i64 *levels; /* the distinct alignments above 1 */
    i64 nlevels;
} Problem;

#define MAX_LEVELS 8 /* alignments the residue rule looks at (search.py) */

static int dead(const Problem *P, i64 slo, i64 shi, const char *placed, const i64 *maxfloor,
                const i64 *floor_, const i64 *remaining, i64 threshold, i64 *lift, i64 *stamp,
                i64 node) {
    i64 n = P->n + 1, capacity = P->capacity;
    i64 watermark = threshold / n;
    for (i64 s = slo; s < shi; s++) {
        i64 rem = remaining[s];
        if (rem > 0 && imax(floor_[s], watermark) + rem > capacity) return 1;
    }
    for (i64 s = slo; s < shi; s++) {
        i64 rem = remaining[s];
        if (rem == 0) continue;
        i64 base = imax(floor_[s], watermark);
        i64 lowest = capacity;
        for (i64 k = P->sec_ptr[s]; k < P->sec_ptr[s + 1]; k++) {
            i64 c = P->sec_members[k];
            if (placed[c]) continue;
            i64 v = round_up(maxfloor[c], P->alignments[c]);
            if (v * n + P->rank[c] > threshold && v < lowest) {
                lowest = v;
                if (v <= base) break;
            }
        }
        if (lowest <= base || lowest + rem <= capacity) continue;
        for (i64 k = P->sec_ptr[s]; k < P->sec_ptr[s + 1]; k++) {
            i64 c = P->sec_members[k];
            if (placed[c]) continue;
            i64 v = round_up(maxfloor[c], P->alignments[c]);
            if (v * n + P->rank[c] > threshold) continue;
            if (stamp[c] != node) {
                stamp[c] = node;
                i64 best = capacity + 1;
                for (i64 j = P->adj_ptr[c]; j < P->adj_ptr[c + 1]; j++) {
                    i64 d = P->adj[j];
                    if (!placed[d]) {
                        i64 u = round_up(maxfloor[d], P->alignments[d]);
                        if (u < watermark) u = watermark;
                        u += P->sizes[d];
                        if (u < best) best = u;
                    }
                }
                lift[c] = round_up(best, P->alignments[c]);
            }
            v = lift[c];
            if (v + P->sizes[c] > capacity) return 1;
            if (v < lowest) {
                lowest = v;
                if (lowest + rem <= capacity) break;
            }
        }
        if (lowest + rem > capacity) return 1;
    }
    /* alignment residues (search.py's docstring, "Alignment"): per alignment A, the gaps
       between the A-aligned buffers of a section need residues mod A that only the other
       buffers' sizes and the free bytes can supply */
    for (i64 s = P->nlevels ? slo : shi; s < shi; s++) {
        i64 rem = remaining[s];
        if (rem == 0) continue;
        i64 base = imax(floor_[s], watermark);
        i64 free_bytes = capacity - base - rem;
        i64 members = P->sec_ptr[s + 1] - P->sec_ptr[s];
        for (i64 q = 0; q < P->nlevels; q++) {
            i64 A = P->levels[q];
            if (free_bytes >= (A - 1) * (members + 2)) continue; /* need cannot exceed it */
            i64 need = 0, have = 0, aligned = 0, last = A;
            for (i64 k = P->sec_ptr[s]; k < P->sec_ptr[s + 1]; k++) {
                i64 c = P->sec_members[k];
                if (placed[c]) continue;
                i64 z = P->sizes[c];
                if (P->alignments[c] % A == 0) {
                    i64 after = (A - z % A) % A, top = ((capacity - z) % A + A) % A;
                    need += after;
                    aligned++;
                    if (top - after < last) last = top - after;
                } else {
                    have += z % A;
                }
            }
            if (aligned == 0) need = (capacity - base) % A;
            else need += (A - base % A) % A + last;
            if (have + free_bytes < need) return 1;
        }
    }
    return 0;
}

static int untileable(const Problem *P, i64 slo, i64 shi, const char *placed,
                      const i64 *maxfloor, const i64 *floor_, const i64 *remaining,
                      i64 threshold, i64 *reach) {
    i64 n = P->n + 1, capacity = P->capacity;
    i64 s = slo;
    while (s < shi) {
        if (remaining[s] == 0 || floor_[s] + remaining[s] != capacity) { s++; continue; }
        i64 f = floor_[s], a = s;
        while (s < shi && remaining[s] > 0 && floor_[s] == f && f + remaining[s] == capacity) s++;
        i64 b = s;
        if (b - a < 2) continue;
        for (i64 t = a; t <= b; t++) reach[t] = 0;
        reach[a] = 1;
        for (i64 t = a; t < b; t++) {
            if (!reach[t]) continue;
            for (i64 k = P->sec_ptr[t]; k < P->sec_ptr[t + 1]; k++) {
                i64 c = P->sec_members[k];
                if (placed[c] || (P->sec_lo[c] != t && t != a)) continue;
                if (f % P->alignments[c] != 0 || maxfloor[c] > f || f + P->sizes[c] > capacity ||
                    f * n + P->rank[c] <= threshold)
                    continue;
                reach[imin(P->sec_hi[c], b)] = 1;
            }
        }
        if (!reach[b]) return 1;
    }
    return 0;
}

static void undo(const Problem *P, i64 b, char *placed, i64 *offsets, i64 *floor_,
                 i64 *remaining, i64 *cross, const i64 *floor_trail, i64 ft, i64 *maxfloor,
                 const i64 *mf_idx, const i64 *mf_val, i64 mt_from, i64 mt_to) {
    placed[b] = 0;
    offsets[b] = -1;
    for (i64 s = P->sec_lo[b]; s < P->sec_hi[b]; s++) {
        floor_[s] = floor_trail[ft];
        remaining[s] += P->sizes[b];
        ft++;
    }
    for (i64 s = P->sec_lo[b] + 1; s < P->sec_hi[b]; s++) cross[s]++;
    for (i64 k = mt_to - 1; k >= mt_from; k--) maxfloor[mf_idx[k]] = mf_val[k];
}

static i64 candidates(const Problem *P, const char *placed, const i64 *maxfloor,
                      const i64 *floor_, const i64 *remaining, i64 slo, i64 shi, i64 threshold,
                      i64 *out, i64 *prio, i64 *late, int valley_first) {
    i64 n = P->n, capacity = P->capacity;
    i64 high = capacity, tight = -1;
    for (i64 s = slo; s < shi; s++)
        if (remaining[s] > 0 && capacity - remaining[s] < high) {
            high = capacity - remaining[s];
            tight = s;
        }
    i64 gap_top = capacity + 1;
    for (i64 c = 0; c < n; c++) {
        if (placed[c] || P->sec_lo[c] < slo || P->sec_hi[c] > shi) continue;
        i64 t = round_up(maxfloor[c], P->alignments[c]) + P->sizes[c];
        if (t < gap_top && P->sizes[c] > 0) gap_top = t;
    }
    i64 m = capacity + 1, k = 0, nlate = 0;
    for (i64 c = 0; c < n; c++) {
        if (placed[c] || P->sec_lo[c] < slo || P->sec_hi[c] > shi) continue;
        i64 tp = P->twin_prev[c];
        if (tp >= 0 && !placed[tp]) continue;
        i64 o = round_up(maxfloor[c], P->alignments[c]);
        if (o + P->sizes[c] > capacity || o * (n + 1) + P->rank[c] <= threshold || o >= gap_top)
            continue;
        if (o > high) {
            if (!(P->sec_lo[c] <= tight && tight < P->sec_hi[c] && remaining[tight] == P->sizes[c]))
                continue;
            nlate++;
            late[n - nlate] = c;
            continue;
        }
        out[k++] = c;
        if (o < m) m = o;
    }
    for (i64 j = 0; j < k; j++) {
        i64 c = out[j];
        i64 o = round_up(maxfloor[c], P->alignments[c]);
        i64 fit = n;
        if (o == m && valley_first) {
            i64 lo = P->sec_lo[c], hi = P->sec_hi[c];
            if ((lo == slo || floor_[lo - 1] > o || remaining[lo - 1] == 0) &&
                (hi == shi || floor_[hi] > o || remaining[hi] == 0))
                fit = 0;
        }
        prio[j] = (o * 2 + (fit ? 1 : 0)) * (n + 1) + P->rank[c];
    }
    for (i64 j = 1; j < k; j++) {
        i64 v = prio[j], c = out[j], i = j;
        while (i > 0 && prio[i - 1] > v) { prio[i] = prio[i - 1]; out[i] = out[i - 1]; i--; }
        prio[i] = v;
        out[i] = c;
    }
    for (i64 j = 0; j < nlate; j++) out[k + j] = late[n - 1 - j];
    return k + nlate;
}

/* zeroed arrays freed together: `mem` remembers every one */
typedef struct { void *ptr[64]; int n; int failed; } Arena;

static void *zalloc(Arena *A, i64 count, size_t width) {
    void *p = calloc((size_t)count + 1, width);
    if (!p || A->n >= 64) { free(p); A->failed = 1; return NULL; }
    A->ptr[A->n++] = p;
    return p;
}

static void arena_free(Arena *A) {
    for (int k = 0; k < A->n; k++) free(A->ptr[k]);
    A->n = 0;
}

static int search_c(const Problem *P, i64 nsec, int valley_first, i64 node_limit,
                    double deadline, volatile i64 *stop, i64 *offsets, i64 *nodes_out) {
    i64 n = P->n, capacity = P->capacity;
    int status = NO_MEMORY;
    i64 nodes = 0;
    Arena A = {{0}, 0, 0};
    i64 total_width = 0;
    for (i64 i = 0; i < n; i++) total_width += P->sec_hi[i] - P->sec_lo[i];
    i64 adj_size = P->adj_ptr[n];
    i64 npool = 2 * n + 4;
    const size_t W = sizeof(i64);
    char *placed = zalloc(&A, n, 1);
    i64 *maxfloor = zalloc(&A, n, W), *floor_ = zalloc(&A, nsec, W);
    i64 *remaining = zalloc(&A, nsec, W), *cross = zalloc(&A, nsec + 1, W);
    i64 *floor_trail = zalloc(&A, total_width, W), *mf_idx = zalloc(&A, adj_size, W);
    i64 *mf_val = zalloc(&A, adj_size, W), *chosen = zalloc(&A, n, W);
    i64 *tried = zalloc(&A, n, W), *cand_start = zalloc(&A, n, W), *ncand = zalloc(&A, n, W);
    i64 *next_cand = zalloc(&A, n, W), *prio = zalloc(&A, n, W), *late = zalloc(&A, n, W);
    i64 *floor_top = zalloc(&A, n + 1, W), *mf_top = zalloc(&A, n + 1, W);
    i64 *scope_lo = zalloc(&A, n, W), *scope_hi = zalloc(&A, n, W), *fail_to = zalloc(&A, n, W);
    i64 *head = zalloc(&A, n, W), *pool_top = zalloc(&A, n, W);
    i64 *p_lo = zalloc(&A, npool, W), *p_hi = zalloc(&A, npool, W);
    i64 *p_thr = zalloc(&A, npool, W), *p_fail = zalloc(&A, npool, W);
    i64 *p_next = zalloc(&A, npool, W), *comp_lo = zalloc(&A, nsec + 1, W);
    i64 *comp_hi = zalloc(&A, nsec + 1, W), *comp_slack = zalloc(&A, nsec + 1, W);
    i64 *lift = zalloc(&A, n, W), *reach = zalloc(&A, nsec + 1, W), *stamp = zalloc(&A, n, W);
    u64 *zkey1 = zalloc(&A, n, sizeof(u64)), *zkey2 = zalloc(&A, n, sizeof(u64));
    u64 *hash1 = zalloc(&A, n, sizeof(u64)), *hash2 = zalloc(&A, n, sizeof(u64));
    i64 memo_size = 1024;
    while (memo_size < (node_limit < (1 << 20) ? node_limit : (1 << 20))) memo_size *= 2;
    u64 *memo_k1 = zalloc(&A, memo_size, sizeof(u64)), *memo_k2 = zalloc(&A, memo_size, sizeof(u64));
    i64 *memo_thr = zalloc(&A, memo_size, W);
    i64 pool_size = 4 * n > 1024 ? 4 * n : 1024;
    i64 *pool = malloc(W * (size_t)pool_size);
    i64 *rank_top = zalloc(&A, n + 1, W);
    i64 *grp = zalloc(&A, n, W), *gkey = zalloc(&A, n, W), *gval = zalloc(&A, n, W);
    i64 rt_size = n + 16, rtop = 0;
    i64 *rt_idx = malloc(W * (size_t)rt_size), *rt_val = malloc(W * (size_t)rt_size);
    u64 ph = 0;
    if (A.failed || !pool || !rt_idx || !rt_val) goto done;
    for (i64 i = 0; i < n; i++) P->rank[i] = i + 1;
    u64 memo_mask = (u64)(memo_size - 1);
    for (i64 i = 0; i < n; i++) stamp[i] = -1;
    for (i64 i = 0; i < n; i++) {
        for (i64 s = P->sec_lo[i]; s < P->sec_hi[i]; s++) remaining[s] += P->sizes[i];
        for (i64 s = P->sec_lo[i] + 1; s < P->sec_hi[i]; s++) cross[s]++;
    }
    for (i64 s = 0; s < nsec; s++)
        if (remaining[s] > capacity) { status = INFEASIBLE; goto done; }
    for (i64 i = 0; i < n; i++) {
        zkey1[i] = mix((u64)(2 * i + 1));
        zkey2[i] = mix((u64)(2 * i + 2) * 0x9E3779B97F4A7C15ULL);
    }
    u64 zob1 = 0, zob2 = 0;
    i64 key_base = n + 1;
    i64 clock_mask = n <= 256 ? 1023 : n <= 1024 ? 63 : 15;
    /* the rules hold for the empty packing too (threshold 0: any buffer may go first) */
    if (dead(P, 0, nsec, placed, maxfloor, floor_, remaining, 0, lift, stamp, -2) ||
        untileable(P, 0, nsec, placed, maxfloor, floor_, remaining, 0, reach)) {
        status = INFEASIBLE;
        goto done;
    }
    i64 depth = 0;
    scope_lo[0] = 0; scope_hi[0] = nsec; fail_to[0] = -1; head[0] = -1; pool_top[0] = 0;
    tried[0] = -1;
    int entering = 1;
    for (;;) {
        if (entering) {
            entering = 0;
            i64 old_lo = scope_lo[depth], old_hi = scope_hi[depth];
            rank_top[depth] = rtop;
            i64 watermark = tried[depth] >= 0 ? tried[depth] / key_base : 0;
            i64 ncomp = 0, s = scope_lo[depth], shi = scope_hi[depth];
            while (s < shi) {
                if (remaining[s] == 0) { s++; continue; }
                i64 start = s, slack = capacity;
                for (;;) {
                    i64 v = capacity - imax(floor_[s], watermark) - remaining[s];
                    if (v < slack) slack = v;
                    s++;
                    if (s >= shi || cross[s] == 0) break;
                }
                comp_lo[ncomp] = start; comp_hi[ncomp] = s; comp_slack[ncomp] = slack;
                ncomp++;
            }
            while (ncomp == 0) {
                i64 e = head[depth];
                if (e < 0) { status = PACKED; goto done; }
                scope_lo[depth] = p_lo[e]; scope_hi[depth] = p_hi[e];
                tried[depth] = p_thr[e]; fail_to[depth] = p_fail[e]; head[depth] = p_next[e];
                ncomp = 1;
                comp_lo[0] = p_lo[e]; comp_hi[0] = p_hi[e];
            }
            i64 first = 0;
            for (i64 k = 1; k < ncomp; k++)
                if (comp_slack[k] < comp_slack[first]) first = k;
            for (i64 k = 0; k < ncomp; k++) {
                if (k == first) continue;
                i64 e = pool_top[depth]++;
                p_lo[e] = comp_lo[k]; p_hi[e] = comp_hi[k]; p_thr[e] = tried[depth];
                p_fail[e] = fail_to[depth]; p_next[e] = head[depth]; head[depth] = e;
            }
            scope_lo[depth] = comp_lo[first];
            scope_hi[depth] = comp_hi[first];
            i64 start = depth > 0 ? cand_start[depth - 1] + ncand[depth - 1] : 0;
            if (start + n > pool_size) {
                i64 grown_size = 2 * pool_size + n;
                i64 *grown = realloc(pool, sizeof(i64) * (size_t)grown_size);
                if (!grown) { status = NO_MEMORY; goto done; }
                pool = grown;
                pool_size = grown_size;
            }
            cand_start[depth] = start;
            if (scope_lo[depth] != old_lo || scope_hi[depth] != old_hi) {
                /* a new group: rank its buffers afresh by the loads left to place (the
                   largest unplaced total over their sections first), ties by the old rank;
                   at the watermark any of them may go next */
                i64 glo = scope_lo[depth], ghi = scope_hi[depth], g = 0;
                for (i64 c = 0; c < n; c++) {
                    if (placed[c] || P->sec_lo[c] < glo || P->sec_hi[c] > ghi) continue;
                    i64 t = 0;
                    for (i64 q = P->sec_lo[c]; q < P->sec_hi[c]; q++)
                        if (remaining[q] > t) t = remaining[q];
                    grp[g] = c; gkey[g] = t; gval[g] = P->rank[c]; g++;
                }
                /* insertion sort of grp by (total desc, rank asc); gval sorted asc */
                for (i64 j = 1; j < g; j++) {
                    i64 c = grp[j], t = gkey[j], i = j;
                    while (i > 0 && (gkey[i - 1] < t ||
                                     (gkey[i - 1] == t && P->rank[grp[i - 1]] > P->rank[c]))) {
                        grp[i] = grp[i - 1]; gkey[i] = gkey[i - 1]; i--;
                    }
                    grp[i] = c; gkey[i] = t;
                }
                for (i64 j = 1; j < g; j++) {
                    i64 v = gval[j], i = j;
                    while (i > 0 && gval[i - 1] > v) { gval[i] = gval[i - 1]; i--; }
                    gval[i] = v;
                }
                if (rtop + g > rt_size) {
                    i64 ns = 2 * rt_size + g;
                    i64 *a1 = realloc(rt_idx, W * (size_t)ns);
                    if (a1) rt_idx = a1;
                    i64 *a2 = a1 ? realloc(rt_val, W * (size_t)ns) : NULL;
                    if (a2) rt_val = a2;
                    if (!a1 || !a2) { status = NO_MEMORY; goto done; }
                    rt_size = ns;
                }
                for (i64 j = 0; j < g; j++) {
                    i64 c = grp[j];
                    if (P->rank[c] == gval[j]) continue;
                    rt_idx[rtop] = c; rt_val[rtop] = P->rank[c]; rtop++;
                    ph ^= mix((u64)(c * key_base + P->rank[c])) ^ mix((u64)(c * key_base + gval[j]));
                    P->rank[c] = gval[j];
                }
                if (tried[depth] >= 0) tried[depth] = (tried[depth] / key_base) * key_base;
            }
            u64 h1 = state_hash(zob1 ^ ph, 0x9E3779B97F4A7C15ULL, floor_, scope_lo[depth], scope_hi[depth]);
            u64 h2 = state_hash(zob2 ^ (ph * 0x9E3779B97F4A7C15ULL), 0xD1B54A32D192ED03ULL, floor_, scope_lo[depth], scope_hi[depth]);
            hash1[depth] = h1;
            hash2[depth] = h2;
            i64 slot = (i64)(h1 & memo_mask);
            if (memo_k1[slot] == h1 && memo_k2[slot] == h2 && memo_thr[slot] <= tried[depth]) {
                ncand[depth] = 0;
                next_cand[depth] = 0;
                continue;
            }
            ncand[depth] = candidates(P, placed, maxfloor, floor_, remaining, scope_lo[depth],
                                      scope_hi[depth], tried[depth], pool + start, prio, late,
                                      valley_first);
            next_cand[depth] = 0;
        }
        i64 best = -1;
        if (next_cand[depth] < ncand[depth]) {
            best = pool[cand_start[depth] + next_cand[depth]];
            next_cand[depth]++;
        }
        i64 slo = scope_lo[depth], shi = scope_hi[depth];
        if (best < 0) {
            i64 slot = (i64)(hash1[depth] & memo_mask);
            memo_k1[slot] = hash1[depth];
            memo_k2[slot] = hash2[depth];
            memo_thr[slot] = tried[depth];
            i64 target = fail_to[depth];
            if (target < 0) { status = INFEASIBLE; goto done; }
            for (i64 d = depth - 1; d >= target; d--) {
                zob1 ^= zkey1[chosen[d]];
                zob2 ^= zkey2[chosen[d]];
                undo(P, chosen[d], placed, offsets, floor_, remaining, cross, floor_trail,
                     floor_top[d], maxfloor, mf_idx, mf_val, mf_top[d], mf_top[d + 1]);
            }
            while (rtop > rank_top[target + 1]) {
                rtop--;
                i64 c = rt_idx[rtop];
                ph ^= mix((u64)(c * key_base + P->rank[c])) ^ mix((u64)(c * key_base + rt_val[rtop]));
                P->rank[c] = rt_val[rtop];
            }
            depth = target;
            continue;
        }
        i64 b = best;
        i64 o = round_up(maxfloor[b], P->alignments[b]);
        i64 best_key = o * key_base + P->rank[b];
        nodes++;
        if (nodes > node_limit) { status = NODE_LIMIT; goto done; }
        if ((nodes & clock_mask) == 0) {
            if (*stop != 0) { status = STOPPED; goto done; }
            if (deadline >= 0.0 && now_s() > deadline) { status = TIME_LIMIT; goto done; }
        }
        i64 top = o + P->sizes[b];
        placed[b] = 1;
        zob1 ^= zkey1[b];
        zob2 ^= zkey2[b];
        offsets[b] = o;
        chosen[depth] = b;
        i64 ft = floor_top[depth];
        for (i64 s = P->sec_lo[b]; s < P->sec_hi[b]; s++) {
            floor_trail[ft++] = floor_[s];
            floor_[s] = top;
            remaining[s] -= P->sizes[b];
        }
        for (i64 s = P->sec_lo[b] + 1; s < P->sec_hi[b]; s++) cross[s]--;
        floor_top[depth + 1] = ft;
        i64 mt = mf_top[depth];
        for (i64 k = P->adj_ptr[b]; k < P->adj_ptr[b + 1]; k++) {
            i64 c = P->adj[k];
            if (!placed[c] && maxfloor[c] < top) {
                mf_idx[mt] = c;
                mf_val[mt] = maxfloor[c];
                maxfloor[c] = top;
                mt++;
            }
        }
        mf_top[depth + 1] = mt;
        if (dead(P, slo, shi, placed, maxfloor, floor_, remaining, best_key, lift, stamp, nodes) ||
            untileable(P, slo, shi, placed, maxfloor, floor_, remaining, best_key, reach)) {
            zob1 ^= zkey1[b];
            zob2 ^= zkey2[b];
            undo(P, b, placed, offsets, floor_, remaining, cross, floor_trail, floor_top[depth],
                 maxfloor, mf_idx, mf_val, mf_top[depth], mt);
            continue;
        }
        depth++;
        tried[depth] = best_key;
        scope_lo[depth] = slo;
        scope_hi[depth] = shi;
        fail_to[depth] = depth - 1;
        head[depth] = head[depth - 1];
        pool_top[depth] = pool_top[depth - 1];
        entering = 1;
    }
done:
    *nodes_out = nodes;
    free(pool);
    free(rt_idx);
    free(rt_val);
    arena_free(&A);
    return status;
}

/* ------------------------------------------------------------------------------------ */
/* Python bindings                                                                      */

typedef struct { Py_buffer view[20]; int n; } Views;

static void views_release(Views *V) {
    for (int k = 0; k < V->n; k++) PyBuffer_Release(&V->view[k]);
    V->n = 0;
}

/* a C-contiguous int64 array from `obj` (e.g. numpy int64); NULL with an exception set */
static i64 *as_i64(Views *V, PyObject *obj, int writable, const char *name, i64 *length) {
    Py_buffer *view = &V->view[V->n];
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, view, flags) < 0) return NULL;
    V->n++;
    const char *f = view->format ? view->format : "B";
    if (*f == '<' || *f == '=' || *f == '@') f++;
    if (view->itemsize != 8 || !(strcmp(f, "l") == 0 || strcmp(f, "q") == 0)) {
        PyErr_Format(PyExc_TypeError, "%s must be a contiguous int64 array", name);
        return NULL;
    }
    *length = (i64)(view->len / 8);
    return (i64 *)view->buf;
}

static PyObject *py_heuristic_offsets(PyObject *self, PyObject *args) {
    PyObject *o_sizes, *o_lowers, *o_uppers, *o_aligns, *o_out;
    long long capacity;
    int which;
    double deadline = -1.0;
    if (!PyArg_ParseTuple(args, "OOOOLiO|d", &o_sizes, &o_lowers, &o_uppers, &o_aligns, &capacity,
                          &which, &o_out, &deadline))
        return NULL;
    Views V = {.n = 0};
    i64 n, m1, m2, m3, m4;
    i64 *sizes = as_i64(&V, o_sizes, 0, "sizes", &n);
    i64 *lowers = sizes ? as_i64(&V, o_lowers, 0, "lowers", &m1) : NULL;
    i64 *uppers = lowers ? as_i64(&V, o_uppers, 0, "uppers", &m2) : NULL;
    i64 *aligns = uppers ? as_i64(&V, o_aligns, 0, "alignments", &m3) : NULL;
    i64 *out = aligns ? as_i64(&V, o_out, 1, "out", &m4) : NULL;
    if (!out) { views_release(&V); return NULL; }
    if (m1 != n || m2 != n || m3 != n || m4 != n) {
        views_release(&V);
        return PyErr_Format(PyExc_ValueError, "arrays of different lengths");
    }
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = heuristic_c(n, sizes, lowers, uppers, aligns, capacity, which, out, deadline);
    Py_END_ALLOW_THREADS
    views_release(&V);
    if (rc) return PyErr_NoMemory();
    Py_RETURN_NONE;
}

static PyObject *place_binding(PyObject *args, int keep) {
    PyObject *o_order, *o_sizes, *o_lowers, *o_uppers, *o_aligns, *o_out;
    long long capacity;
    int rule;
    double deadline = -1.0;
    if (!PyArg_ParseTuple(args, "OOOOOLiO|d", &o_order, &o_sizes, &o_lowers, &o_uppers, &o_aligns,
                          &capacity, &rule, &o_out, &deadline))
        return NULL;
    Views V = {.n = 0};
    i64 n, k, m1, m2, m3, m4;
    i64 *order = as_i64(&V, o_order, 0, "order", &k);
    i64 *sizes = order ? as_i64(&V, o_sizes, 0, "sizes", &n) : NULL;
    i64 *lowers = sizes ? as_i64(&V, o_lowers, 0, "lowers", &m1) : NULL;
    i64 *uppers = lowers ? as_i64(&V, o_uppers, 0, "uppers", &m2) : NULL;
    i64 *aligns = uppers ? as_i64(&V, o_aligns, 0, "alignments", &m3) : NULL;
    i64 *out = aligns ? as_i64(&V, o_out, 1, "out", &m4) : NULL;
    if (!out) { views_release(&V); return NULL; }
    int bad = m1 != n || m2 != n || m3 != n || m4 != n;
    for (i64 j = 0; j < k && !bad; j++) bad = order[j] < 0 || order[j] >= n;
    if (bad) {
        views_release(&V);
        return PyErr_Format(PyExc_ValueError, "arrays of different lengths or order out of range");
    }
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = place_core(order, k, n, sizes, lowers, uppers, aligns, capacity, rule == 1, out, keep,
                    deadline);
    Py_END_ALLOW_THREADS
    views_release(&V);
    if (rc) return PyErr_NoMemory();
    Py_RETURN_NONE;
}

static PyObject *py_place_in_order(PyObject *self, PyObject *args) {
    return place_binding(args, 0);
}

static PyObject *py_place_around(PyObject *self, PyObject *args) {
    return place_binding(args, 1);
}

static PyObject *py_search(PyObject *self, PyObject *args) {
    PyObject *o[11];
    long long nsec, capacity, node_limit;
    int valley_first;
    double deadline;
    if (!PyArg_ParseTuple(args, "OOOOLOOOOOLpLdOO", &o[0], &o[1], &o[2], &o[3], &nsec, &o[4],
                          &o[5], &o[6], &o[7], &o[8], &capacity, &valley_first, &node_limit,
                          &deadline, &o[9], &o[10]))
        return NULL;
    static const char *names[] = {"sizes", "alignments", "sec_lo", "sec_hi", "adj_ptr", "adj",
                                  "sec_ptr", "sec_members", "twin_prev", "stop", "offsets"};
    Views V = {.n = 0};
    i64 *a[11], len[11];
    for (int k = 0; k < 11; k++) {
        a[k] = as_i64(&V, o[k], k >= 9, names[k], &len[k]);
        if (!a[k]) { views_release(&V); return NULL; }
    }
    i64 n = len[0];
    if (len[1] != n || len[2] != n || len[3] != n || len[4] != n + 1 || len[7] != a[6][len[6] - 1] ||
        len[6] != nsec + 1 || len[8] != n || len[9] < 1 || len[10] != n || a[4][n] != len[5]) {
        views_release(&V);
        return PyErr_Format(PyExc_ValueError, "search: inconsistent array lengths");
    }
    i64 *rank = malloc(sizeof(i64) * (size_t)(n + 1));
    if (!rank) { views_release(&V); return PyErr_NoMemory(); }
    i64 *levels = malloc(sizeof(i64) * (size_t)(n + 1)), nlevels = 0;
    if (!levels) { free(rank); views_release(&V); return PyErr_NoMemory(); }
    for (i64 i = 0; i < n; i++) {
        i64 al = a[1][i], seen = al <= 1;
        for (i64 q = 0; q < nlevels && !seen; q++) seen = levels[q] == al;
        if (!seen && nlevels < MAX_LEVELS) levels[nlevels++] = al;
    }
    Problem P = {n, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], capacity, rank,
                 levels, nlevels};
    i64 nodes = 0;
    int status;
    Py_BEGIN_ALLOW_THREADS
    status = search_c(&P, nsec, valley_first, node_limit, deadline, (volatile i64 *)a[9], a[10],
                      &nodes);
    Py_END_ALLOW_THREADS
    views_release(&V);
    free(rank);
    free(levels);
    if (status == NO_MEMORY) return PyErr_NoMemory();
    return Py_BuildValue("iL", status, (long long)nodes);
}

static PyMethodDef methods[] = {
    {"heuristic_offsets", py_heuristic_offsets, METH_VARARGS,
     "heuristic_offsets(sizes, lowers, uppers, alignments, capacity, which, out): offsets by "
     "heuristic `which` (0 best-fit by size, 1 best-fit by length, 2 greedy by size, 3 greedy "
     "by conflicts) written into `out` (-1 = did not fit). An optional `deadline` "
     "(time.perf_counter() seconds) stops it, the buffers left at -1."},
    {"place_in_order", py_place_in_order, METH_VARARGS,
     "place_in_order(order, sizes, lowers, uppers, alignments, capacity, gap_rule, out): "
     "first fit (0) or best fit (1) in `order`, written into `out`; optional `deadline` as "
     "for heuristic_offsets."},
    {"place_around", py_place_around, METH_VARARGS,
     "place_around(order, sizes, lowers, uppers, alignments, capacity, gap_rule, offsets): "
     "the buffers with offsets >= 0 stay put; the others, in `order`, by first fit (0) or "
     "best fit (1) around them, written into `offsets` (-1 = did not fit)."},
    {"search", py_search, METH_VARARGS,
     "search(sizes, alignments, sec_lo, sec_hi, nsec, adj_ptr, adj, sec_ptr, sec_members, "
     "twin_prev, capacity, valley_first, node_limit, deadline, stop, offsets) -> (status, "
     "nodes): the canonical-packing search (memplace.model.packing.search.search), the GIL "
     "released while it runs."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_core",
                                    "memplace's compiled packing core.", -1, methods};

PyMODINIT_FUNC PyInit__core(void) { return PyModule_Create(&module); }
