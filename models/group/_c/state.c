/* The group's helpers (models/group/state.py) on the C view, and emit: the canonical form and the
 * generation shift every successor goes through. */
#include "group.h"

int group_find_member(const Grp *g, int id) {
    for (int i = 0; i < g->n; i++) {
        if (g->m[i].id == id) {
            return i;
        }
    }
    return -1;
}

void group_update_member(Grp *g, const Member *m) {
    int i = group_find_member(g, m->id);
    if (i >= 0) {
        g->m[i] = *m;
    }
}

/* Adds a member where sorted() puts it; GIVE_UP when it does not fit. */
int group_insert_member(Grp *g, const Member *m) {
    if (g->n >= MAX_MEMBERS || group_find_member(g, m->id) >= 0) {
        return GIVE_UP;
    }
    int i = g->n++;
    while (i > 0 && group_id_rank[g->m[i - 1].id] > group_id_rank[m->id]) {
        g->m[i] = g->m[i - 1];
        i--;
    }
    g->m[i] = *m;
    return 0;
}

void group_drop_member(Grp *g, int id) {
    int j = 0;
    for (int i = 0; i < g->n; i++) {
        if (g->m[i].id != id) {
            g->m[j++] = g->m[i];
        }
    }
    g->n = j;
}

void group_without_member(Grp *g, int id) {
    group_drop_member(g, id);
    if (g->leaderId == id) {
        g->leaderId = g->n ? g->m[0].id : NO_ID;
    }
    g->pendingSync &= ~bit(id);
}

void group_store(Grp *g) {
    g->has_stored = 1;
    g->stored.generationId = g->generationId;
    g->stored.leaderId = g->leaderId;
    g->stored.n = g->n;
    for (int i = 0; i < g->n; i++) {
        g->stored.m[i] = g->m[i];
        g->stored.m[i].awaitingJoin = g->stored.m[i].awaitingSync = 0;
        g->stored.m[i].connected = 1;
    }
}

int group_holds_id(const Cons *me, int id) {
    if (me->phase == STOPPED || me->phase == FENCED) {
        return 0;
    }
    return me->id == id || (me->response.present && me->response.id == id);
}

int group_behind(const Cons *me, const Member *m) {
    if (me->id == m->id) {
        return 1;
    }
    if (me->id != NO_ID) {
        return 0;
    }
    return (m->awaitingJoin && m->connected) || (me->response.present && me->response.id == m->id);
}

void group_error_response(Resp *r, int api, int error) {
    memset(r, 0, sizeof *r);
    r->present = 1;
    r->api = api;
    r->error = error;
    r->id = NO_ID;
    r->generationId = -1;
    r->leaderId = NO_ID;
}

void group_sync_response(Resp *r, unsigned assignment) {
    group_error_response(r, SYNC_GROUP, NONE);
    r->assignment = assignment;
}

void group_join_response(const Grp *g, int id, Resp *r) {
    group_error_response(r, JOIN_GROUP, NONE);
    r->id = id;
    r->generationId = g->generationId;
    r->leaderId = g->leaderId;
    if (id == g->leaderId) {
        r->nmembers = g->n;
        for (int i = 0; i < g->n; i++) {
            r->memberId[i] = g->m[i].id;
            r->memberInst[i] = g->m[i].inst;
            r->memberClaimed[i] = g->m[i].claimed;
            r->memberGeneration[i] = g->m[i].claimedGeneration;
        }
    }
}

uint64_t group_mentioned_ids(const S *s) {
    const Grp *g = &s->g;
    uint64_t ids = g->pending | bit(g->leaderId);
    for (int i = 0; i < g->n; i++) {
        ids |= bit(g->m[i].id);
    }
    if (g->has_stored) {
        ids |= bit(g->stored.leaderId);
        for (int i = 0; i < g->stored.n; i++) {
            ids |= bit(g->stored.m[i].id);
        }
    }
    for (int k = 0; k < s->nc; k++) {
        const Cons *me = &s->c[k];
        ids |= bit(me->id);
        if (me->request.present) {
            ids |= bit(me->request.id);
            for (int i = 0; i < me->request.nassign; i++) {
                ids |= bit(me->request.assignId[i]);
            }
        }
        if (me->response.present) {
            ids |= bit(me->response.id) | bit(me->response.leaderId);
            for (int i = 0; i < me->response.nmembers; i++) {
                ids |= bit(me->response.memberId[i]);
            }
        }
    }
    return ids;
}

/* fresh_member_id; GIVE_UP past the ids this code names. */
int group_fresh_member_id(int consumer, uint64_t mentioned, int *out) {
    for (int n = 0; n < IDS_PER_CONSUMER; n++) {
        int id = consumer * IDS_PER_CONSUMER + n;
        if (!(mentioned & bit(id))) {
            *out = id;
            return 0;
        }
    }
    return GIVE_UP;
}

/* The generations of _generations(s), the lowest of those >= 0. */
static long lowest_generation(const S *s) {
    long low = LONG_MAX;
#define SEE(x)                                                                                                    \
    do {                                                                                                          \
        long g_ = (x);                                                                                            \
        if (g_ >= 0 && g_ < low) {                                                                                \
            low = g_;                                                                                             \
        }                                                                                                         \
    } while (0)
    const Grp *g = &s->g;
    SEE(g->generationId);
    if (g->has_stored) {
        SEE(g->stored.generationId);
        for (int i = 0; i < g->stored.n; i++) {
            SEE(g->stored.m[i].claimedGeneration);
        }
    }
    for (int i = 0; i < g->n; i++) {
        SEE(g->m[i].claimedGeneration);
    }
    for (int k = 0; k < s->nc; k++) {
        const Cons *me = &s->c[k];
        SEE(me->generationId);
        SEE(me->assignedGeneration);
        if (me->request.present) {
            SEE(me->request.generationId);
            SEE(me->request.claimedGeneration);
        }
        if (me->response.present) {
            SEE(me->response.generationId);
            for (int i = 0; i < me->response.nmembers; i++) {
                SEE(me->response.memberGeneration[i]);
            }
        }
    }
#undef SEE
    return low;
}

static void shift(long *x, long by) {
    if (*x >= 0) {
        *x -= by;
    }
}

/* _normalise: the smallest generation becomes 1 (when none is 0 or 1). */
static void normalise(S *s) {
    long low = lowest_generation(s);
    if (low <= 1) {
        return;
    }
    long by = low - 1;
    Grp *g = &s->g;
    shift(&g->generationId, by);
    if (g->has_stored) {
        shift(&g->stored.generationId, by);
        for (int i = 0; i < g->stored.n; i++) {
            shift(&g->stored.m[i].claimedGeneration, by);
        }
    }
    for (int i = 0; i < g->n; i++) {
        shift(&g->m[i].claimedGeneration, by);
    }
    for (int k = 0; k < s->nc; k++) {
        Cons *me = &s->c[k];
        shift(&me->generationId, by);
        shift(&me->assignedGeneration, by);
        if (me->request.present) {
            shift(&me->request.generationId, by);
            shift(&me->request.claimedGeneration, by);
        }
        if (me->response.present) {
            shift(&me->response.generationId, by);
            for (int i = 0; i < me->response.nmembers; i++) {
                shift(&me->response.memberGeneration[i], by);
            }
        }
    }
}

/* _canonical: a callback no longer parked keeps no lost connection. */
static void canonical(S *s) {
    for (int i = 0; i < s->g.n; i++) {
        Member *m = &s->g.m[i];
        if (!m->awaitingJoin && !m->awaitingSync) {
            m->connected = 1;
        }
    }
}

/* Appends (action, next) to out: next is made canonical and normalised, then built. */
int group_emit(const Context *c, const S *orig, PyObject *out, PyObject *act, S *next) {
    if (act == NULL) {
        return -1;
    }
    if (!group_eq(&next->g, &orig->g)) {
        canonical(next);
    }
    normalise(next);
    return tuples_emit(out, act, group_build_state(c, orig, next));
}
