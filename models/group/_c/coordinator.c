/* The coordinator (models/group/coordinator.py): the JoinGroup and SyncGroup handlers with their
 * deliveries to parked callbacks, the timers, and failover (unload and load). */
#include "group.h"

int group_instance_id(const Context *c, int consumer) {
    if (!c->static_membership) {
        return -1;
    }
    return consumer == c->consumers ? 0 : consumer;
}

int group_member_error(const Grp *g, int id, int inst) {
    if (inst >= 0) {
        for (int i = 0; i < g->n; i++) {
            if (g->m[i].inst == inst) {
                return g->m[i].id == id ? NONE : FENCED_INSTANCE_ID;
            }
        }
        return UNKNOWN_MEMBER_ID;
    }
    return group_find_member(g, id) >= 0 ? NONE : UNKNOWN_MEMBER_ID;
}

static void respond(S *s, int consumer, const Resp *r) { s->c[consumer].response = *r; }

/* Completes a parked callback (``member`` as it was when the completion began). */
static void deliver(S *s, Member member, const Resp *r) {
    int i = group_find_member(&s->g, member.id);
    if (i >= 0 && (member.awaitingJoin || member.awaitingSync)) {
        s->g.m[i].awaitingJoin = s->g.m[i].awaitingSync = 0;
        s->g.m[i].connected = 1;
    }
    Cons *me = &s->c[member.consumer];
    int waiting = r->api == JOIN_GROUP ? JOINING : SYNCING;
    int connected = member.connected && me->incarnation == member.incarnation &&
                    (me->id == member.id || me->id == NO_ID);
    if (connected && me->phase == waiting && !me->request.present && !me->response.present) {
        me->response = *r;
    }
}

static int pending_blocking(const Context *c, const Grp *g) { return c->pending_members_block_join && g->pending; }

static void complete_join(S *s) {
    Grp *g = &s->g;
    Member members[MAX_MEMBERS];
    int n = 0, any_awaiting = 0;
    for (int i = 0; i < g->n; i++) {
        if (g->m[i].awaitingJoin || g->m[i].inst >= 0) {
            members[n++] = g->m[i];
            any_awaiting |= g->m[i].awaitingJoin;
        }
    }
    if (n && !any_awaiting) {
        return;
    }
    int leader = g->leaderId, leader_joined = 0;
    for (int i = 0; i < n; i++) {
        leader_joined |= members[i].id == leader && members[i].awaitingJoin;
    }
    if (!leader_joined) {
        leader = NO_ID;
        for (int i = 0; i < n; i++) {
            if (members[i].awaitingJoin) {
                leader = members[i].id;
                break;
            }
        }
    }
    long generation = g->generationId + 1;
    if (n == 0) {
        g->state = EMPTY;
        g->generationId = generation;
        g->leaderId = NO_ID;
        g->n = 0;
        g->pendingSync = 0;
        g->joinDelay = DELAY_NONE;
        g->newMemberAdded = 0;
        group_store(g);
        return;
    }
    g->state = COMPLETING_REBALANCE;
    g->generationId = generation;
    g->leaderId = leader;
    g->n = n;
    g->pendingSync = 0;
    for (int i = 0; i < n; i++) {
        g->m[i] = members[i];
        g->m[i].awaitingJoin = 0;
        g->m[i].isNew = 0;
        g->pendingSync |= bit(members[i].id);
    }
    g->joinDelay = DELAY_NONE;
    g->newMemberAdded = 0;
    Grp completed = *g;
    for (int i = 0; i < n; i++) {
        if (members[i].awaitingJoin) {
            Resp r;
            group_join_response(&completed, members[i].id, &r);
            deliver(s, members[i], &r);
        }
    }
}

static void try_complete_join(const Context *c, S *s) {
    Grp *g = &s->g;
    if (g->state != PREPARING_REBALANCE || g->joinDelay == DELAY_INITIAL) {
        return;
    }
    for (int i = 0; i < g->n; i++) {
        if (!g->m[i].awaitingJoin) {
            return;
        }
    }
    if (!pending_blocking(c, g)) {
        complete_join(s);
    }
}

static void prepare_rebalance(const Context *c, S *s) {
    Grp *g = &s->g;
    if (g->state == COMPLETING_REBALANCE) {
        Member before[MAX_MEMBERS];
        int n = g->n;
        memcpy(before, g->m, sizeof(Member) * (size_t)n);
        Resp r;
        group_error_response(&r, SYNC_GROUP, REBALANCE_IN_PROGRESS);
        for (int i = 0; i < n; i++) {
            if (before[i].awaitingSync) {
                deliver(s, before[i], &r);
            }
        }
        for (int i = 0; i < g->n; i++) {
            g->m[i].assignment = 0;
            g->m[i].awaitingSync = 0;
        }
    }
    int initial = g->state == EMPTY && c->initial_rebalance_delay;
    g->state = PREPARING_REBALANCE;
    g->pendingSync = 0;
    g->joinDelay = initial ? DELAY_INITIAL : DELAY_JOIN;
    g->delayExtensionsLeft = initial ? c->delay_extensions : 0;
    if (initial) {
        g->newMemberAdded = 0;
    }
    try_complete_join(c, s);
}

static void maybe_prepare_rebalance(const Context *c, S *s) {
    int state = s->g.state;
    if (state == STABLE || state == COMPLETING_REBALANCE || state == EMPTY) {
        prepare_rebalance(c, s);
    } else {
        try_complete_join(c, s);
    }
}

static int add_member_and_rebalance(const Context *c, S *s, int consumer, int id, int inst, unsigned claimed,
                                    long claimedGeneration) {
    Grp *g = &s->g;
    Member m = {id, inst, consumer, s->c[consumer].incarnation, claimed, claimedGeneration, 1, 0, 1, 1, 0, NULL};
    if (group_insert_member(g, &m) != 0) {
        return GIVE_UP;
    }
    if (g->leaderId == NO_ID) {
        g->leaderId = id;
    }
    g->newMemberAdded = g->newMemberAdded || (g->state == PREPARING_REBALANCE && g->generationId == 0);
    maybe_prepare_rebalance(c, s);
    return 0;
}

static void fence_parked(S *s, const Member *old, int consumer) {
    if (!(old->awaitingJoin || old->awaitingSync)) {
        return;
    }
    if (old->consumer == consumer && old->incarnation == s->c[consumer].incarnation) {
        Member m = *old;
        m.awaitingJoin = m.awaitingSync = 0;
        m.connected = 1;
        group_update_member(&s->g, &m);
        return;
    }
    Resp r;
    group_error_response(&r, old->awaitingJoin ? JOIN_GROUP : SYNC_GROUP, FENCED_INSTANCE_ID);
    deliver(s, *old, &r);
}

static int replace_static_member(const Context *c, S *s, int consumer, Member old, int new_id, const Req *request) {
    Grp *g = &s->g;
    long incarnation = s->c[consumer].incarnation;
    if (!c->fence_replaced_static_member && g->state != STABLE) {
        Member taken = old;
        taken.consumer = consumer;
        taken.incarnation = incarnation;
        taken.claimed = request->claimed;
        taken.claimedGeneration = request->claimedGeneration;
        taken.awaitingJoin = 1;
        taken.connected = 1;
        group_update_member(g, &taken);
        maybe_prepare_rebalance(c, s);
        return 0;
    }
    fence_parked(s, &old, consumer);
    Member fresh = old;
    fresh.id = new_id;
    fresh.consumer = consumer;
    fresh.incarnation = incarnation;
    fresh.connected = 1;
    fresh.claimed = request->claimed;
    fresh.claimedGeneration = request->claimedGeneration;
    fresh.awaitingJoin = 1;
    fresh.awaitingSync = 0;
    fresh.isNew = 0;
    group_drop_member(g, old.id);
    if (group_insert_member(g, &fresh) != 0) {
        return GIVE_UP;
    }
    if (g->leaderId == old.id) {
        g->leaderId = new_id;
    }
    uint64_t was_pending = g->pendingSync & bit(old.id);
    g->pendingSync &= ~bit(old.id);
    if (was_pending) {
        g->pendingSync |= bit(new_id);
    }
    Resp r;
    if (g->state == STABLE) {
        if (c->persist_static_replacement) {
            group_store(g);
        }
        fresh.awaitingJoin = 0;
        group_update_member(g, &fresh);
        group_join_response(g, new_id, &r);
        r.nmembers = 0; /* KIP-814: a static leader rejoining a Stable group skips the assignment */
        respond(s, consumer, &r);
        return 0;
    }
    if (g->state == COMPLETING_REBALANCE) {
        if (c->rebalance_static_rejoin_in_completing) {
            prepare_rebalance(c, s);
            return 0;
        }
        fresh.awaitingJoin = 0;
        group_update_member(g, &fresh);
        group_join_response(g, new_id, &r);
        respond(s, consumer, &r);
        return 0;
    }
    try_complete_join(c, s);
    return 0;
}

/* _handle_join: the error it answers with in *error. */
int group_handle_join(const Context *c, S *s, int consumer, int *error) {
    Req request = s->c[consumer].request;
    s->c[consumer].request.present = 0;
    memset(&s->c[consumer].request, 0, sizeof(Req));
    Grp *g = &s->g;
    Resp r;
    *error = NONE;
    if (g->state == DEAD) {
        *error = COORDINATOR_NOT_AVAILABLE;
        group_error_response(&r, JOIN_GROUP, COORDINATOR_NOT_AVAILABLE);
        respond(s, consumer, &r);
        return 0;
    }
    int inst = group_instance_id(c, consumer);
    if (request.id == NO_ID) {
        int new_id;
        if (group_fresh_member_id(consumer, group_mentioned_ids(s), &new_id) != 0) {
            return GIVE_UP;
        }
        if (inst >= 0) {
            for (int i = 0; i < g->n; i++) {
                if (g->m[i].inst == inst) {
                    return replace_static_member(c, s, consumer, g->m[i], new_id, &request);
                }
            }
            return add_member_and_rebalance(c, s, consumer, new_id, inst, request.claimed, request.claimedGeneration);
        }
        if (c->require_known_member_id) {
            g->pending |= bit(new_id);
            group_error_response(&r, JOIN_GROUP, MEMBER_ID_REQUIRED);
            r.id = new_id;
            *error = MEMBER_ID_REQUIRED;
            respond(s, consumer, &r);
            return 0;
        }
        return add_member_and_rebalance(c, s, consumer, new_id, inst, request.claimed, request.claimedGeneration);
    }
    if (g->pending & bit(request.id)) {
        g->pending &= ~bit(request.id);
        return add_member_and_rebalance(c, s, consumer, request.id, inst, request.claimed, request.claimedGeneration);
    }
    *error = group_member_error(g, request.id, inst);
    if (*error != NONE) {
        group_error_response(&r, JOIN_GROUP, *error);
        respond(s, consumer, &r);
        return 0;
    }
    Member member = g->m[group_find_member(g, request.id)];
    Member parked = member;
    parked.claimed = request.claimed;
    parked.claimedGeneration = request.claimedGeneration;
    parked.awaitingJoin = 1;
    parked.consumer = consumer;
    parked.incarnation = s->c[consumer].incarnation;
    parked.connected = 1;
    int same_metadata = member.claimed == request.claimed && member.claimedGeneration == request.claimedGeneration;
    if (g->state == PREPARING_REBALANCE) {
        group_update_member(g, &parked);
        try_complete_join(c, s);
        return 0;
    }
    if (g->state == COMPLETING_REBALANCE) {
        if (same_metadata) {
            group_join_response(g, member.id, &r);
            respond(s, consumer, &r);
        } else {
            group_update_member(g, &parked);
            prepare_rebalance(c, s);
        }
        return 0;
    }
    if (member.id == g->leaderId || !same_metadata) {
        group_update_member(g, &parked);
        prepare_rebalance(c, s);
        return 0;
    }
    group_join_response(g, member.id, &r);
    respond(s, consumer, &r);
    return 0;
}

int group_handle_sync(const Context *c, S *s, int consumer, int *error) {
    Req request = s->c[consumer].request;
    memset(&s->c[consumer].request, 0, sizeof(Req));
    Grp *g = &s->g;
    Resp r;
    if (g->state == DEAD) {
        *error = COORDINATOR_NOT_AVAILABLE;
        group_error_response(&r, SYNC_GROUP, COORDINATOR_NOT_AVAILABLE);
        respond(s, consumer, &r);
        return 0;
    }
    *error = group_member_error(g, request.id, group_instance_id(c, consumer));
    if (*error == NONE && request.generationId != g->generationId) {
        *error = ILLEGAL_GENERATION;
    }
    if (*error == NONE && g->state == PREPARING_REBALANCE) {
        *error = REBALANCE_IN_PROGRESS;
    }
    if (*error == NONE && g->state == EMPTY) {
        *error = UNKNOWN_MEMBER_ID;
    }
    if (*error != NONE) {
        group_error_response(&r, SYNC_GROUP, *error);
        respond(s, consumer, &r);
        return 0;
    }
    Member member = g->m[group_find_member(g, request.id)];
    g->pendingSync &= ~bit(member.id);
    if (g->state == STABLE) {
        group_sync_response(&r, member.assignment);
        respond(s, consumer, &r);
        return 0;
    }
    Member synced = member;
    synced.awaitingSync = 1;
    synced.consumer = consumer;
    synced.incarnation = s->c[consumer].incarnation;
    synced.connected = 1;
    group_update_member(g, &synced);
    if (member.id != g->leaderId) {
        return 0;
    }
    for (int i = 0; i < g->n; i++) {
        unsigned given = 0;
        for (int k = 0; k < request.nassign; k++) {
            if (request.assignId[k] == g->m[i].id) {
                given = request.assignMask[k];
            }
        }
        g->m[i].assignment = given;
    }
    g->state = STABLE;
    group_store(g);
    Member before[MAX_MEMBERS];
    int n = g->n;
    memcpy(before, g->m, sizeof(Member) * (size_t)n);
    for (int i = 0; i < n; i++) {
        if (before[i].awaitingSync) {
            group_sync_response(&r, before[i].assignment);
            deliver(s, before[i], &r);
        }
    }
    return 0;
}

void group_remove_member_and_update_group(const Context *c, S *s, int id) {
    Grp *g = &s->g;
    Member member = g->m[group_find_member(g, id)];
    if (member.awaitingJoin || member.awaitingSync) {
        Resp r;
        group_error_response(&r, member.awaitingJoin ? JOIN_GROUP : SYNC_GROUP, UNKNOWN_MEMBER_ID);
        deliver(s, member, &r);
    }
    group_without_member(g, id);
    if (g->state == STABLE || g->state == COMPLETING_REBALANCE) {
        prepare_rebalance(c, s);
    } else {
        try_complete_join(c, s);
    }
}

/* _may_expire for the members of ``which`` (indexes into the group) and the pending ids. */
static int may_expire(const Context *c, const S *s, const int *which, int n, uint64_t pending, int session) {
    if (c->timeouts_any) {
        return 1;
    }
    int heartbeat_thread = session && !c->join_group_v0;
    for (int k = 0; k < n; k++) {
        const Member *m = &s->g.m[which[k]];
        const Cons *me = &s->c[m->consumer];
        int alive = me->phase != STOPPED && me->phase != FENCED && me->incarnation == m->incarnation;
        if (alive && group_behind(me, m) && (heartbeat_thread || !me->stalled)) {
            return 0;
        }
    }
    for (int id = 0; pending && id < MAX_IDS; id++) {
        if (!(pending & bit(id))) {
            continue;
        }
        for (int k = 0; k < s->nc; k++) {
            if (group_holds_id(&s->c[k], id)) {
                return 0;
            }
        }
    }
    return 1;
}

/* _leader_cannot_assign: -1 on error, else 0 or 1 (the assignor throws on the leader's members). */
static int leader_cannot_assign(const Context *c, const Grp *g) {
    if (g->state != COMPLETING_REBALANCE || !(g->pendingSync & bit(g->leaderId))) {
        return 0;
    }
    Resp r;
    group_join_response(g, g->leaderId, &r);
    PyObject *members = r.nmembers ? group_build_response_members(c, &r) : Py_NewRef(c->empty_tuple);
    if (members == NULL) {
        return -1;
    }
    PyObject *result = PyObject_CallOneArg(c->run_assignor, members);
    Py_DECREF(members);
    if (result == NULL) {
        return -1;
    }
    int throws = result == Py_None;
    Py_DECREF(result);
    return throws;
}

/* The group's own timers: the initial rebalance delay, the rebalance timeout in PreparingRebalance and
 * the sync timeout (DelayedSync, KAFKA-12890). */
static int group_timers(const Context *c, const S *s, PyObject *out) {
    const Grp *g = &s->g;
    S next;
    if (g->state == PREPARING_REBALANCE && g->joinDelay == DELAY_INITIAL) {
        next = *s;
        if (g->newMemberAdded && g->delayExtensionsLeft > 0) {
            next.g.newMemberAdded = 0;
            next.g.delayExtensionsLeft--;
        } else {
            next.g.joinDelay = DELAY_JOIN;
            complete_join(&next);
        }
        if (group_emit(c, s, out, group_action(c, A_INITIAL_DELAY, 0, 0, NO_ID, -1), &next) < 0) {
            return -1;
        }
    }
    int instant = c->join_group_v0 && !c->v0_rebalance_timeout;
    int which[MAX_MEMBERS], n;
    if (g->state == PREPARING_REBALANCE && g->joinDelay == DELAY_JOIN) {
        n = 0;
        for (int i = 0; i < g->n; i++) {
            if (!g->m[i].awaitingJoin) {
                which[n++] = i;
            }
        }
        uint64_t pending = c->pending_members_block_join ? g->pending : 0;
        if ((n || pending) && (instant || may_expire(c, s, which, n, pending, 0))) {
            next = *s;
            complete_join(&next);
            if (next.g.state != PREPARING_REBALANCE &&
                group_emit(c, s, out, group_action(c, A_REBALANCE_TIMEOUT, 0, 0, NO_ID, -1), &next) < 0) {
                return -1;
            }
        }
    }
    if (c->delayed_sync && (g->state == COMPLETING_REBALANCE || g->state == STABLE) && g->pendingSync) {
        int cannot = leader_cannot_assign(c, g);
        if (cannot < 0) {
            return -1;
        }
        n = 0;
        for (int i = 0; i < g->n; i++) {
            if ((g->pendingSync & bit(g->m[i].id)) && !(cannot && g->m[i].id == g->leaderId)) {
                which[n++] = i;
            }
        }
        if (instant || may_expire(c, s, which, n, 0, 0)) {
            next = *s;
            for (int i = 0; i < g->n; i++) {
                if (g->pendingSync & bit(g->m[i].id)) {
                    group_without_member(&next.g, g->m[i].id);
                }
            }
            next.g.pendingSync = 0;
            prepare_rebalance(c, &next);
            if (group_emit(c, s, out, group_action(c, A_SYNC_TIMEOUT, 0, 0, NO_ID, -1), &next) < 0) {
                return -1;
            }
        }
    }
    return 0;
}

/* Each member's timers: a new member's join timeout (KIP-394), a session timeout, a consumer pausing. */
static int member_timers(const Context *c, const S *s, PyObject *out) {
    const Grp *g = &s->g;
    S next;
    for (int i = 0; i < g->n; i++) {
        const Member *m = &g->m[i];
        if (m->isNew && m->awaitingJoin) {
            int abandoned = !m->connected || may_expire(c, s, &i, 1, 0, 1);
            if (c->new_member_join_timeout && abandoned) {
                next = *s;
                group_remove_member_and_update_group(c, &next, m->id);
                if (group_emit(c, s, out, group_action(c, A_NEW_MEMBER_TIMEOUT, 0, 0, m->id, -1), &next) < 0) {
                    return -1;
                }
            }
        } else if (!(m->awaitingJoin || m->awaitingSync)) {
            if (may_expire(c, s, &i, 1, 0, 1)) {
                next = *s;
                group_remove_member_and_update_group(c, &next, m->id);
                if (group_emit(c, s, out, group_action(c, A_SESSION_TIMEOUT, 0, 0, m->id, -1), &next) < 0) {
                    return -1;
                }
            } else if (c->consumer_pauses && s->faults < c->max_faults) {
                next = *s;
                group_remove_member_and_update_group(c, &next, m->id);
                next.faults++;
                if (group_emit(c, s, out, group_action(c, A_PAUSE, 0, 0, m->id, -1), &next) < 0) {
                    return -1;
                }
            }
        }
    }
    return 0;
}

/* The pending members' timers (KIP-394), in the order of their ids' ranks. */
static int pending_member_timers(const Context *c, const S *s, PyObject *out) {
    const Grp *g = &s->g;
    if (!g->pending) {
        return 0;
    }
    int order[MAX_IDS], n_ids = 0;
    for (int id = 0; id < MAX_IDS; id++) {
        if (g->pending & bit(id)) {
            int k = n_ids++;
            while (k > 0 && group_id_rank[order[k - 1]] > group_id_rank[id]) {
                order[k] = order[k - 1];
                k--;
            }
            order[k] = id;
        }
    }
    for (int k = 0; k < n_ids; k++) {
        if (may_expire(c, s, NULL, 0, bit(order[k]), 0)) {
            S next = *s;
            next.g.pending &= ~bit(order[k]);
            try_complete_join(c, &next);
            if (group_emit(c, s, out, group_action(c, A_PENDING_TIMEOUT, 0, 0, order[k], -1), &next) < 0) {
                return -1;
            }
        }
    }
    return 0;
}

int group_coordinator_timers(const Context *c, const S *s, PyObject *out) {
    if (group_timers(c, s, out) < 0 || member_timers(c, s, out) < 0 || pending_member_timers(c, s, out) < 0) {
        return -1;
    }
    return 0;
}

void group_unload(S *s) {
    Grp *g = &s->g;
    Member before[MAX_MEMBERS];
    int n = g->n;
    memcpy(before, g->m, sizeof(Member) * (size_t)n);
    for (int i = 0; i < n; i++) {
        if (before[i].awaitingJoin || before[i].awaitingSync) {
            Resp r;
            group_error_response(&r, before[i].awaitingJoin ? JOIN_GROUP : SYNC_GROUP, NOT_COORDINATOR);
            deliver(s, before[i], &r);
        }
    }
    for (int i = 0; i < g->n; i++) {
        g->m[i].isNew = 0;
        g->m[i].connected = 1;
    }
    g->state = DEAD;
    g->pendingSync = 0;
    g->pending = 0;
    g->joinDelay = DELAY_NONE;
    s->faults++;
}

void group_load(S *s) {
    Grp *g = &s->g;
    Stored stored = g->stored;
    int has_stored = g->has_stored;
    memset(g, 0, sizeof *g);
    g->state = EMPTY;
    g->leaderId = NO_ID;
    g->joinDelay = DELAY_NONE;
    if (has_stored) {
        g->state = stored.n ? STABLE : EMPTY;
        g->generationId = stored.generationId;
        g->leaderId = stored.leaderId;
        g->n = stored.n;
        memcpy(g->m, stored.m, sizeof(Member) * (size_t)stored.n);
        g->has_stored = 1;
        g->stored = stored;
    }
}
