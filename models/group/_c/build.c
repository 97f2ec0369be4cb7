/* The way back from the C view of group.h to the model's values: cached strings and sets, the
 * NamedTuples of a successor (sharing every tuple the step did not change) and the model's own
 * Action labels. */
#include "group.h"

/* -- module-wide caches of immutable values --------------------------------------------------------- */

static PyObject *id_strs[MAX_IDS], *inst_strs[MAX_PROCESSES], *partition_sets[MAX_PARTITION_MASK],
    *claim_tuples[MAX_PARTITION_MASK];
int group_id_rank[MAX_IDS]; /* where each id's string sorts among all ids */

void group_rank_ids(void) {
    char names[MAX_IDS][8];
    for (int i = 0; i < MAX_IDS; i++) {
        snprintf(names[i], sizeof names[i], "c%d-%d", i / IDS_PER_CONSUMER, i % IDS_PER_CONSUMER);
    }
    for (int i = 0; i < MAX_IDS; i++) {
        int r = 0;
        for (int j = 0; j < MAX_IDS; j++) {
            if (strcmp(names[j], names[i]) < 0) {
                r++;
            }
        }
        group_id_rank[i] = r;
    }
}

static PyObject *id_str(const Context *c, int id) {
    if (id == NO_ID) {
        return Py_NewRef(c->no_member);
    }
    if (id_strs[id] == NULL) {
        id_strs[id] = PyUnicode_FromFormat("c%d-%d", id / IDS_PER_CONSUMER, id % IDS_PER_CONSUMER);
        if (id_strs[id] == NULL) {
            return NULL;
        }
        PyUnicode_InternInPlace(&id_strs[id]);
    }
    return Py_NewRef(id_strs[id]);
}

static PyObject *inst_str(int inst) {
    if (inst < 0) {
        Py_RETURN_NONE;
    }
    if (inst_strs[inst] == NULL) {
        inst_strs[inst] = PyUnicode_FromFormat("i%d", inst);
        if (inst_strs[inst] == NULL) {
            return NULL;
        }
    }
    return Py_NewRef(inst_strs[inst]);
}

static PyObject *partition_set(unsigned mask) {
    return tuples_mask_set(partition_sets, 6, mask);
}

static PyObject *claim_tuple(unsigned mask) {
    if (claim_tuples[mask] == NULL) {
        int n = 0;
        for (int p = 0; p < 6; p++) {
            n += (mask >> p) & 1;
        }
        PyObject *t = PyTuple_New(n);
        if (t == NULL) {
            return NULL;
        }
        int i = 0;
        for (int p = 0; p < 6; p++) {
            if (mask & (1u << p)) {
                PyObject *v = PyLong_FromLong(p);
                if (v == NULL) {
                    Py_DECREF(t);
                    return NULL;
                }
                PyTuple_SET_ITEM(t, i++, v);
            }
        }
        claim_tuples[mask] = t;
    }
    return Py_NewRef(claim_tuples[mask]);
}

/* -- equality (what a successor may share with the state it came from) ------------------------------ */

static int member_eq(const Member *a, const Member *b) {
    return a->id == b->id && a->inst == b->inst && a->consumer == b->consumer && a->incarnation == b->incarnation &&
           a->claimed == b->claimed && a->claimedGeneration == b->claimedGeneration &&
           a->awaitingJoin == b->awaitingJoin && a->awaitingSync == b->awaitingSync && a->isNew == b->isNew &&
           a->connected == b->connected && a->assignment == b->assignment;
}

static int members_eq(const Member *a, int na, const Member *b, int nb) {
    if (na != nb) {
        return 0;
    }
    for (int i = 0; i < na; i++) {
        if (!member_eq(&a[i], &b[i])) {
            return 0;
        }
    }
    return 1;
}

static int stored_eq(const Stored *a, const Stored *b) {
    return a->generationId == b->generationId && a->leaderId == b->leaderId && members_eq(a->m, a->n, b->m, b->n);
}

int group_eq(const Grp *a, const Grp *b) {
    return a->state == b->state && a->generationId == b->generationId && a->leaderId == b->leaderId &&
           members_eq(a->m, a->n, b->m, b->n) && a->pending == b->pending && a->pendingSync == b->pendingSync &&
           a->joinDelay == b->joinDelay && a->newMemberAdded == b->newMemberAdded &&
           a->delayExtensionsLeft == b->delayExtensionsLeft && a->has_stored == b->has_stored &&
           (!a->has_stored || stored_eq(&a->stored, &b->stored));
}

static int assignment_eq(const Req *a, const Req *b) {
    if (a->nassign != b->nassign) {
        return 0;
    }
    for (int i = 0; i < a->nassign; i++) {
        if (a->assignId[i] != b->assignId[i] || a->assignMask[i] != b->assignMask[i]) {
            return 0;
        }
    }
    return 1;
}

static int request_eq(const Req *a, const Req *b) {
    if (a->present != b->present) {
        return 0;
    }
    return !a->present || (a->api == b->api && a->id == b->id && a->generationId == b->generationId &&
                           a->claimed == b->claimed && a->claimedGeneration == b->claimedGeneration &&
                           assignment_eq(a, b));
}

static int response_members_eq(const Resp *a, const Resp *b) {
    if (a->nmembers != b->nmembers) {
        return 0;
    }
    for (int i = 0; i < a->nmembers; i++) {
        if (a->memberId[i] != b->memberId[i] || a->memberInst[i] != b->memberInst[i] ||
            a->memberClaimed[i] != b->memberClaimed[i] || a->memberGeneration[i] != b->memberGeneration[i]) {
            return 0;
        }
    }
    return 1;
}

static int response_eq(const Resp *a, const Resp *b) {
    if (a->present != b->present) {
        return 0;
    }
    return !a->present || (a->api == b->api && a->error == b->error && a->id == b->id &&
                           a->generationId == b->generationId && a->leaderId == b->leaderId &&
                           a->assignment == b->assignment && response_members_eq(a, b));
}

static int consumer_eq(const Cons *a, const Cons *b) {
    return a->phase == b->phase && a->id == b->id && a->generationId == b->generationId && a->owned == b->owned &&
           a->assigned == b->assigned && a->incarnation == b->incarnation && a->rejoinRequested == b->rejoinRequested &&
           a->stalled == b->stalled && a->assignedGeneration == b->assignedGeneration &&
           request_eq(&a->request, &b->request) && response_eq(&a->response, &b->response);
}

/* -- building values (every maker checks what it is given and steals it) ---------------------------- */

static PyObject *name(PyObject *names, int i) { return Py_NewRef(PyTuple_GET_ITEM(names, i)); }
static PyObject *boolean(int b) { return Py_NewRef(b ? Py_True : Py_False); }

static PyObject *metadata(unsigned claimed, long generation) {
    PyObject *items[META_SIZE] = {[META_CLAIMED] = claim_tuple(claimed),
                                  [META_GENERATION] = PyLong_FromLong(generation)};
    return tuples_new_named(NULL, META_SIZE, items);
}

static PyObject *id_set(const Context *c, uint64_t mask) {
    PyObject *set = PyFrozenSet_New(NULL);
    if (set == NULL) {
        return NULL;
    }
    for (int id = 0; id < MAX_IDS; id++) {
        if (mask & ((uint64_t)1 << id)) {
            PyObject *v = id_str(c, id);
            if (v == NULL || PySet_Add(set, v) < 0) {
                Py_XDECREF(v);
                Py_DECREF(set);
                return NULL;
            }
            Py_DECREF(v);
        }
    }
    return set;
}

/* A member as a tuple: one of the state's own when it is unchanged. */
static PyObject *build_member(const Context *c, const S *orig, const Member *m) {
    const Grp *g = &orig->g;
    for (int i = 0; i < g->n; i++) {
        if (g->m[i].id == m->id && member_eq(&g->m[i], m)) {
            return Py_NewRef(g->m[i].src);
        }
    }
    if (g->has_stored) {
        for (int i = 0; i < g->stored.n; i++) {
            if (g->stored.m[i].id == m->id && member_eq(&g->stored.m[i], m)) {
                return Py_NewRef(g->stored.m[i].src);
            }
        }
    }
    PyObject *items[GM_SIZE] = {
        [GM_MEMBER_ID] = id_str(c, m->id),
        [GM_GROUP_INSTANCE_ID] = inst_str(m->inst),
        [GM_CONSUMER] = PyLong_FromLong(m->consumer),
        [GM_INCARNATION] = PyLong_FromLong(m->incarnation),
        [GM_METADATA] = metadata(m->claimed, m->claimedGeneration),
        [GM_AWAITING_JOIN] = boolean(m->awaitingJoin),
        [GM_AWAITING_SYNC] = boolean(m->awaitingSync),
        [GM_ASSIGNMENT] = partition_set(m->assignment),
        [GM_IS_NEW] = boolean(m->isNew),
        [GM_CONNECTED] = boolean(m->connected),
    };
    return tuples_new_named(c->member_type, GM_SIZE, items);
}

static PyObject *build_members(const Context *c, const S *orig, const Member *m, int n) {
    const Grp *g = &orig->g;
    if (members_eq(m, n, g->m, g->n)) {
        return Py_NewRef(g->members_src);
    }
    if (g->has_stored && members_eq(m, n, g->stored.m, g->stored.n)) {
        return Py_NewRef(g->stored.members_src);
    }
    PyObject *t = PyTuple_New(n);
    if (t == NULL) {
        return NULL;
    }
    for (int i = 0; i < n; i++) {
        PyObject *member = build_member(c, orig, &m[i]);
        if (member == NULL) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, i, member);
    }
    return t;
}

static PyObject *build_group(const Context *c, const S *orig, const Grp *g) {
    const Grp *o = &orig->g;
    if (group_eq(g, o)) {
        return Py_NewRef(o->src);
    }
    PyObject *stored;
    if (!g->has_stored) {
        stored = Py_NewRef(Py_None);
    } else if (o->has_stored && stored_eq(&g->stored, &o->stored)) {
        stored = Py_NewRef(o->stored.src);
    } else {
        PyObject *items[SG_SIZE] = {
            [SG_GENERATION_ID] = PyLong_FromLong(g->stored.generationId),
            [SG_LEADER_ID] = id_str(c, g->stored.leaderId),
            [SG_MEMBERS] = build_members(c, orig, g->stored.m, g->stored.n),
        };
        stored = tuples_new_named(c->stored_type, SG_SIZE, items);
    }
    PyObject *items[G_SIZE] = {
        [G_STATE] = name(c->group_states, g->state),
        [G_GENERATION_ID] = PyLong_FromLong(g->generationId),
        [G_LEADER_ID] = id_str(c, g->leaderId),
        [G_MEMBERS] = build_members(c, orig, g->m, g->n),
        [G_PENDING_MEMBERS] = g->pending == o->pending ? Py_NewRef(o->pending_src) : id_set(c, g->pending),
        [G_PENDING_SYNC_MEMBERS] =
            g->pendingSync == o->pendingSync ? Py_NewRef(o->pending_sync_src) : id_set(c, g->pendingSync),
        [G_JOIN_DELAY] = name(c->delays, g->joinDelay),
        [G_NEW_MEMBER_ADDED] = boolean(g->newMemberAdded),
        [G_DELAY_EXTENSIONS_LEFT] = PyLong_FromLong(g->delayExtensionsLeft),
        [G_STORED] = stored,
    };
    return tuples_new_named(c->group_type, G_SIZE, items);
}

static PyObject *build_request(const Context *c, const Req *orig, const Req *q) {
    if (!q->present) {
        Py_RETURN_NONE;
    }
    if (request_eq(q, orig)) {
        return Py_NewRef(orig->src);
    }
    PyObject *assignment = Py_NewRef(q->assignment_src); /* (), or the assignor's answer */
    PyObject *items[REQ_SIZE] = {
        [REQ_API] = name(c->apis, q->api),
        [REQ_MEMBER_ID] = id_str(c, q->id),
        [REQ_GENERATION_ID] = PyLong_FromLong(q->generationId),
        [REQ_METADATA] = metadata(q->claimed, q->claimedGeneration),
        [REQ_ASSIGNMENT] = assignment,
    };
    return tuples_new_named(c->request_type, REQ_SIZE, items);
}

PyObject *group_build_response_members(const Context *c, const Resp *r) {
    PyObject *t = PyTuple_New(r->nmembers);
    if (t == NULL) {
        return NULL;
    }
    for (int i = 0; i < r->nmembers; i++) {
        PyObject *items[SUB_SIZE] = {
            [SUB_MEMBER_ID] = id_str(c, r->memberId[i]),
            [SUB_INSTANCE_ID] = inst_str(r->memberInst[i]),
            [SUB_METADATA] = metadata(r->memberClaimed[i], r->memberGeneration[i]),
        };
        PyObject *triple = tuples_new_named(NULL, SUB_SIZE, items);
        if (triple == NULL) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, i, triple);
    }
    return t;
}

static PyObject *build_response(const Context *c, const Resp *orig, const Resp *r) {
    if (!r->present) {
        Py_RETURN_NONE;
    }
    if (response_eq(r, orig)) {
        return Py_NewRef(orig->src);
    }
    PyObject *members = r->nmembers == 0 ? Py_NewRef(c->empty_tuple)
                        : orig->present && response_members_eq(r, orig) ? Py_NewRef(orig->members_src)
                                                                         : group_build_response_members(c, r);
    PyObject *items[RESP_SIZE] = {
        [RESP_API] = name(c->apis, r->api),
        [RESP_ERROR] = name(c->errors, r->error),
        [RESP_MEMBER_ID] = id_str(c, r->id),
        [RESP_GENERATION_ID] = PyLong_FromLong(r->generationId),
        [RESP_LEADER_ID] = id_str(c, r->leaderId),
        [RESP_MEMBERS] = members,
        [RESP_ASSIGNMENT] = partition_set(r->assignment),
    };
    return tuples_new_named(c->response_type, RESP_SIZE, items);
}

static PyObject *build_consumer(const Context *c, const Cons *orig, const Cons *me) {
    if (consumer_eq(me, orig)) {
        return Py_NewRef(orig->src);
    }
    PyObject *items[CS_SIZE] = {
        [CS_PHASE] = name(c->phases, me->phase),
        [CS_MEMBER_ID] = id_str(c, me->id),
        [CS_GENERATION_ID] = PyLong_FromLong(me->generationId),
        [CS_OWNED] = partition_set(me->owned),
        [CS_ASSIGNED] = partition_set(me->assigned),
        [CS_REQUEST] = build_request(c, &orig->request, &me->request),
        [CS_RESPONSE] = build_response(c, &orig->response, &me->response),
        [CS_INCARNATION] = PyLong_FromLong(me->incarnation),
        [CS_REJOIN_REQUESTED] = boolean(me->rejoinRequested),
        [CS_STALLED] = boolean(me->stalled),
        [CS_ASSIGNED_GENERATION] = PyLong_FromLong(me->assignedGeneration),
    };
    return tuples_new_named(c->consumer_type, CS_SIZE, items);
}

PyObject *group_build_state(const Context *c, const S *orig, const S *s) {
    PyObject *group = build_group(c, orig, &s->g);
    if (group == NULL) {
        return NULL;
    }
    int same = group == orig->g.src && s->faults == orig->faults;
    PyObject *consumers = PyTuple_New(s->nc);
    if (consumers == NULL) {
        Py_DECREF(group);
        return NULL;
    }
    for (int i = 0; i < s->nc; i++) {
        PyObject *me = build_consumer(c, &orig->c[i], &s->c[i]);
        if (me == NULL) {
            Py_DECREF(group);
            Py_DECREF(consumers);
            return NULL;
        }
        same = same && me == orig->c[i].src;
        PyTuple_SET_ITEM(consumers, i, me);
    }
    if (same) {
        Py_DECREF(group);
        Py_DECREF(consumers);
        return Py_NewRef(orig->src);
    }
    PyObject *items[S_SIZE] = {[S_GROUP] = group, [S_CONSUMERS] = consumers, [S_FAULTS] = PyLong_FromLong(s->faults)};
    return tuples_new_named(c->state_type, S_SIZE, items);
}

/* -- action labels -------------------------------------------------------------------------------- */

/* The model's Action for (kind, consumer, error, member id, generation), through its own cache. */
PyObject *group_action(const Context *c, int kind, int consumer, int error, int id, long generation) {
    long long key = ((((long long)kind * 8 + consumer) * 16 + error) * 64 + (id + 1)) * 4096 + (generation + 1);
    PyObject *k = PyLong_FromLongLong(key);
    if (k == NULL) {
        return NULL;
    }
    PyObject *found = PyDict_GetItemWithError(c->actions, k);
    if (found != NULL || PyErr_Occurred()) {
        Py_DECREF(k);
        return found; /* borrowed: the dict keeps it */
    }
    PyObject *args[5];
    int n = 0;
    args[n++] = PyTuple_GET_ITEM(c->action_names, kind);
    switch (kind) {
    case A_HANDLE_JOIN:
    case A_HANDLE_SYNC:
    case A_RECEIVE_JOIN:
    case A_RECEIVE_SYNC:
    case A_HEARTBEAT:
        args[n++] = PyLong_FromLong(consumer);
        args[n++] = Py_NewRef(PyTuple_GET_ITEM(c->errors, error));
        break;
    case A_OFFSET_COMMIT:
        args[n++] = PyLong_FromLong(consumer);
        args[n++] = id_str(c, id);
        args[n++] = PyLong_FromLong(generation);
        args[n++] = Py_NewRef(PyTuple_GET_ITEM(c->errors, error));
        break;
    case A_SEND_JOIN:
    case A_LEAVE:
    case A_CRASH:
    case A_START:
    case A_STALL:
    case A_REQUEST_TIMEOUT:
        args[n++] = PyLong_FromLong(consumer);
        break;
    case A_SESSION_TIMEOUT:
    case A_PAUSE:
    case A_PENDING_TIMEOUT:
    case A_NEW_MEMBER_TIMEOUT:
        args[n++] = id_str(c, id);
        break;
    default:
        break;
    }
    PyObject *value = NULL;
    int ok = 1;
    for (int i = 1; i < n; i++) {
        ok = ok && args[i] != NULL;
    }
    if (ok) {
        value = PyObject_Vectorcall(c->act, args, (size_t)n, NULL);
    }
    for (int i = 1; i < n; i++) {
        Py_XDECREF(args[i]);
    }
    if (value != NULL && PyDict_SetItem(c->actions, k, value) < 0) {
        Py_CLEAR(value);
    }
    Py_DECREF(k);
    Py_XDECREF(value); /* the dict and the model's cache keep it */
    return value;
}
