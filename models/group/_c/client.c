/* The consumers (models/group/client.py): joins, syncs, heartbeats, commits, responses, crashes,
 * stalls, leaves and request timeouts. */
#include "group.h"

static void subscription(const Context *c, const Cons *me, unsigned *claimed, long *generation) {
    if (c->cooperative) {
        *claimed = me->owned;
    } else if (c->sticky) {
        *claimed = me->assigned;
    } else {
        *claimed = 0;
        *generation = -1;
        return;
    }
    if (c->claims_generation == CLAIMS_NONE || !(*claimed || c->claimless_generation_matters)) {
        *generation = -1;
    } else if (c->claims_generation == CLAIMS_CURRENT) {
        *generation = me->generationId;
    } else {
        *generation = me->assignedGeneration;
    }
}

static void send_join(const Context *c, Cons *me) {
    if (!c->cooperative) {
        me->owned = 0;
    }
    me->rejoinRequested = 0;
    Req *q = &me->request;
    memset(q, 0, sizeof *q);
    q->present = 1;
    q->api = JOIN_GROUP;
    q->id = me->id;
    q->generationId = me->generationId;
    subscription(c, me, &q->claimed, &q->claimedGeneration);
    q->assignment_src = c->empty_tuple;
    me->phase = JOINING;
}

static unsigned owned_after_reset(const Context *c, const Cons *me, const Resp *response) {
    return response != NULL && !c->join_prepare_after_reset ? me->owned : 0;
}

static void on_error(const Context *c, Cons *me, int error, const Resp *response) {
    switch (error) {
    case MEMBER_ID_REQUIRED:
        me->id = response->id;
        me->phase = UNJOINED;
        break;
    case REBALANCE_IN_PROGRESS:
        me->phase = UNJOINED;
        memset(&me->request, 0, sizeof(Req));
        if (response != NULL && response->api == SYNC_GROUP && c->sync_rebalance_resets_generation) {
            me->generationId = -1;
            me->owned = owned_after_reset(c, me, response);
        }
        break;
    case ILLEGAL_GENERATION:
        me->generationId = -1;
        me->owned = owned_after_reset(c, me, response);
        me->phase = UNJOINED;
        break;
    case UNKNOWN_MEMBER_ID:
        me->id = NO_ID;
        me->generationId = -1;
        me->owned = owned_after_reset(c, me, response);
        me->phase = UNJOINED;
        break;
    case FENCED_INSTANCE_ID:
        me->phase = FENCED;
        me->owned = 0;
        break;
    default: /* NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE */
        me->phase = UNJOINED;
    }
    me->rejoinRequested = 0;
}

static void stop(Cons *me, long incarnation) {
    memset(me, 0, sizeof *me);
    me->phase = STOPPED;
    me->id = NO_ID;
    me->generationId = -1;
    me->incarnation = incarnation;
    me->assignedGeneration = -1;
}

static int handle_request(const Context *c, const S *s, int k, PyObject *out) {
    S next = *s;
    int error, api = s->c[k].request.api;
    int status = api == JOIN_GROUP ? group_handle_join(c, &next, k, &error) : group_handle_sync(c, &next, k, &error);
    if (status != 0) {
        return status;
    }
    int kind = api == JOIN_GROUP ? A_HANDLE_JOIN : A_HANDLE_SYNC;
    return group_emit(c, s, out, group_action(c, kind, k, error, NO_ID, -1), &next);
}

static int receive(const Context *c, const S *s, int k, PyObject *out) {
    const Resp *r = &s->c[k].response;
    S next = *s;
    Cons *me = &next.c[k];
    memset(&me->response, 0, sizeof(Resp));
    int error = r->error;
    PyObject *assignment = NULL;
    if (r->error != NONE) {
        on_error(c, me, r->error, r);
    } else if (r->api == JOIN_GROUP) {
        me->id = r->id;
        me->generationId = r->generationId;
        me->phase = SYNCING;
        if (r->leaderId == r->id && r->nmembers) {
            assignment = PyObject_CallOneArg(c->run_assignor, r->members_src);
            if (assignment == NULL) {
                return -1;
            }
        } else {
            assignment = Py_NewRef(c->empty_tuple);
        }
        if (assignment == Py_None) {
            error = ASSIGNOR_FAILED;
            me->phase = UNJOINED;
        } else {
            Req *q = &me->request;
            memset(q, 0, sizeof *q);
            q->present = 1;
            q->api = SYNC_GROUP;
            q->id = me->id;
            q->generationId = me->generationId;
            q->claimedGeneration = -1;
            q->assignment_src = assignment;
            if (!PyTuple_CheckExact(assignment) || PyTuple_GET_SIZE(assignment) > MAX_MEMBERS) {
                Py_DECREF(assignment);
                return GIVE_UP;
            }
            q->nassign = (int)PyTuple_GET_SIZE(assignment);
            for (int i = 0; i < q->nassign; i++) {
                PyObject *pair = PyTuple_GET_ITEM(assignment, i);
                int status = !PyTuple_CheckExact(pair) || PyTuple_GET_SIZE(pair) != ASSIGN_SIZE ? GIVE_UP : 0;
                if (status == 0 &&
                    (status = group_read_id(PyTuple_GET_ITEM(pair, ASSIGN_MEMBER_ID), &q->assignId[i])) == 0) {
                    status = group_read_partitions(PyTuple_GET_ITEM(pair, ASSIGN_PARTITIONS), &q->assignMask[i]);
                }
                if (status != 0) {
                    Py_DECREF(assignment);
                    return status;
                }
            }
        }
    } else { /* SyncGroup: onJoinComplete */
        unsigned given = r->assignment;
        if (c->cooperative) {
            me->rejoinRequested = (me->owned & ~given) != 0;
        }
        me->owned = me->assigned = given;
        me->phase = CONSUMING;
        if (c->claims_generation == CLAIMS_ASSIGNMENT) {
            me->assignedGeneration = me->generationId;
        }
    }
    int kind = r->api == JOIN_GROUP ? A_RECEIVE_JOIN : A_RECEIVE_SYNC;
    int status = group_emit(c, s, out, group_action(c, kind, k, error, NO_ID, -1), &next);
    Py_XDECREF(assignment);
    return status;
}

static int parked(const Grp *g, int k, const Cons *me) {
    for (int i = 0; i < g->n; i++) {
        const Member *m = &g->m[i];
        if (m->consumer == k && m->incarnation == me->incarnation && m->connected &&
            (m->awaitingJoin || m->awaitingSync)) {
            return 1;
        }
    }
    return 0;
}

static int heartbeat_error(const Context *c, const Grp *g, const Cons *me, int k) {
    if (g->state == DEAD) {
        return NONE;
    }
    int error = group_member_error(g, me->id, group_instance_id(c, k));
    if (error != NONE) {
        return error;
    }
    if (me->generationId != g->generationId) {
        return ILLEGAL_GENERATION;
    }
    return g->state == PREPARING_REBALANCE ? REBALANCE_IN_PROGRESS : NONE;
}

static int offset_commit(const Context *c, const S *s, int k, PyObject *out) {
    const Cons *me = &s->c[k];
    const Grp *g = &s->g;
    if (me->generationId < -1 || me->generationId > 4000) {
        return GIVE_UP; /* past what an action's key holds */
    }
    S next = *s;
    int error;
    if (g->state == DEAD) {
        error = COORDINATOR_NOT_AVAILABLE;
    } else {
        error = group_member_error(g, me->id, group_instance_id(c, k));
        if (error == NONE && me->generationId != g->generationId) {
            error = ILLEGAL_GENERATION;
        }
        if (error == NONE && g->state == COMPLETING_REBALANCE) {
            error = REBALANCE_IN_PROGRESS;
        }
        if (error != NONE) {
            on_error(c, &next.c[k], error, NULL);
        }
    }
    return group_emit(c, s, out, group_action(c, A_OFFSET_COMMIT, k, error, me->id, me->generationId), &next);
}

static int leave(const Context *c, const S *s, int k, PyObject *out) {
    const Cons *me = &s->c[k];
    S next = *s;
    Cons *left = &next.c[k];
    left->phase = STOPPED;
    left->id = NO_ID;
    left->generationId = -1;
    left->owned = left->assigned = 0;
    left->assignedGeneration = -1;
    next.faults++;
    if (next.g.state != DEAD && group_find_member(&next.g, me->id) >= 0) {
        group_remove_member_and_update_group(c, &next, me->id);
    }
    return group_emit(c, s, out, group_action(c, A_LEAVE, k, 0, NO_ID, -1), &next);
}

static int crash_steps(const Context *c, const S *s, int k, PyObject *out, int stall) {
    S next = *s;
    stop(&next.c[k], s->c[k].incarnation);
    next.faults++;
    if (group_emit(c, s, out, group_action(c, A_CRASH, k, 0, NO_ID, -1), &next) < 0) {
        return -1;
    }
    if (stall && c->poll_stalls) {
        next = *s;
        next.c[k].stalled = 1;
        next.faults++;
        if (group_emit(c, s, out, group_action(c, A_STALL, k, 0, NO_ID, -1), &next) < 0) {
            return -1;
        }
    }
    return 0;
}

int group_consumer_steps(const Context *c, const S *s, int k, PyObject *out) {
    const Cons *me = &s->c[k];
    int may_fail = s->faults < c->max_faults, status;
    S next;
    if (me->phase == STOPPED) {
        next = *s;
        stop(&next.c[k], me->incarnation + 1);
        next.c[k].phase = UNJOINED;
        return group_emit(c, s, out, group_action(c, A_START, k, 0, NO_ID, -1), &next);
    }
    if (me->phase == FENCED) {
        return 0;
    }
    if (me->stalled) {
        if (me->request.present && (status = handle_request(c, s, k, out)) != 0) {
            return status;
        }
        return may_fail ? crash_steps(c, s, k, out, 0) : 0;
    }
    int idle = !me->request.present && !me->response.present;
    int can_join = idle && (me->phase == UNJOINED || (me->phase == CONSUMING && me->rejoinRequested));
    if (can_join && me->phase == UNJOINED) {
        next = *s;
        send_join(c, &next.c[k]);
        if (group_emit(c, s, out, group_action(c, A_SEND_JOIN, k, 0, NO_ID, -1), &next) < 0) {
            return -1;
        }
    }
    if (me->request.present && (status = handle_request(c, s, k, out)) != 0) {
        return status;
    }
    if (me->response.present && (status = receive(c, s, k, out)) != 0) {
        return status;
    }
    if (c->slow_coordinator && may_fail && (me->phase == JOINING || me->phase == SYNCING) && idle &&
        parked(&s->g, k, me)) {
        next = *s;
        next.c[k].phase = UNJOINED;
        next.faults++;
        for (int i = 0; i < next.g.n; i++) {
            Member *m = &next.g.m[i];
            if (m->consumer == k && m->incarnation == me->incarnation && (m->awaitingJoin || m->awaitingSync)) {
                m->connected = 0;
            }
        }
        if (group_emit(c, s, out, group_action(c, A_REQUEST_TIMEOUT, k, 0, NO_ID, -1), &next) < 0) {
            return -1;
        }
    }
    if (me->phase == CONSUMING && idle) {
        if (can_join) {
            next = *s;
            send_join(c, &next.c[k]);
            if (group_emit(c, s, out, group_action(c, A_SEND_JOIN, k, 0, NO_ID, -1), &next) < 0) {
                return -1;
            }
        }
        int error = heartbeat_error(c, &s->g, me, k);
        if (error != NONE) {
            next = *s;
            on_error(c, &next.c[k], error, NULL);
            if (group_emit(c, s, out, group_action(c, A_HEARTBEAT, k, error, NO_ID, -1), &next) < 0) {
                return -1;
            }
        }
        if (me->owned && (status = offset_commit(c, s, k, out)) != 0) {
            return status;
        }
    }
    if (may_fail) {
        if (crash_steps(c, s, k, out, 1) < 0) {
            return -1;
        }
        if (me->phase == CONSUMING && me->id != NO_ID && !c->static_membership && leave(c, s, k, out) < 0) {
            return -1;
        }
    }
    return 0;
}
