/* Reading a state of the group model into the C view of group.h: member ids as numbers, partition
 * and member-id sets as bit masks. A state this code does not read gives GIVE_UP. */
#include "group.h"

/* The index of a string in a tuple of strings. */
static int read_name(PyObject *value, PyObject *names, int *out) {
    Py_ssize_t n = PyTuple_GET_SIZE(names);
    for (Py_ssize_t i = 0; i < n; i++) {
        if (PyTuple_GET_ITEM(names, i) == value) {
            *out = (int)i;
            return 0;
        }
    }
    if (!PyUnicode_CheckExact(value)) {
        return GIVE_UP;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        int eq = PyUnicode_Compare(PyTuple_GET_ITEM(names, i), value);
        if (eq == -1 && PyErr_Occurred()) {
            return -1;
        }
        if (eq == 0) {
            *out = (int)i;
            return 0;
        }
    }
    return GIVE_UP;
}

/* "c<consumer>-<n>" as c * 12 + n, "" as NO_ID. */
int group_read_id(PyObject *value, int *out) {
    if (!PyUnicode_CheckExact(value)) {
        return GIVE_UP;
    }
    Py_ssize_t len;
    const char *text = PyUnicode_AsUTF8AndSize(value, &len);
    if (text == NULL) {
        return -1;
    }
    if (len == 0) {
        *out = NO_ID;
        return 0;
    }
    if (len < 4 || len > 5 || text[0] != 'c' || text[2] != '-' || text[1] < '0' || text[1] >= '0' + MAX_PROCESSES) {
        return GIVE_UP;
    }
    int n = 0;
    for (Py_ssize_t i = 3; i < len; i++) {
        if (text[i] < '0' || text[i] > '9' || (i == 3 && len == 5 && text[i] == '0')) {
            return GIVE_UP;
        }
        n = n * 10 + (text[i] - '0');
    }
    if (n >= IDS_PER_CONSUMER) {
        return GIVE_UP;
    }
    *out = (text[1] - '0') * IDS_PER_CONSUMER + n;
    return 0;
}

static int read_inst(PyObject *value, int *out) {
    if (value == Py_None) {
        *out = -1;
        return 0;
    }
    if (!PyUnicode_CheckExact(value)) {
        return GIVE_UP;
    }
    Py_ssize_t len;
    const char *text = PyUnicode_AsUTF8AndSize(value, &len);
    if (text == NULL) {
        return -1;
    }
    if (len != 2 || text[0] != 'i' || text[1] < '0' || text[1] >= '0' + MAX_PROCESSES) {
        return GIVE_UP;
    }
    *out = text[1] - '0';
    return 0;
}

/* A frozenset of partitions (ints below MAX_PARTITIONS) as a mask into *out: -1, 0 or GIVE_UP. */
int group_read_partitions(PyObject *set, unsigned *out) {
    return tuples_read_mask(set, MAX_PARTITIONS, MAX_PARTITIONS, out);
}

static int read_ids(PyObject *set, uint64_t *out) {
    if (!PyFrozenSet_CheckExact(set)) {
        return GIVE_UP;
    }
    PyObject *items[MAX_IDS];
    Py_ssize_t n = tuples_set_items(set, items, MAX_IDS);
    if (n < 0 || n > MAX_IDS) {
        return n < 0 ? -1 : GIVE_UP;
    }
    uint64_t mask = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        int id, status = group_read_id(items[i], &id);
        if (status != 0) {
            return status;
        }
        if (id == NO_ID) {
            return GIVE_UP;
        }
        mask |= (uint64_t)1 << id;
    }
    *out = mask;
    return 0;
}

/* (tuple(sorted(claimed)), generation) */
static int read_metadata(PyObject *t, unsigned *claimed, long *generation) {
    if (!PyTuple_CheckExact(t) || PyTuple_GET_SIZE(t) != META_SIZE) {
        return GIVE_UP;
    }
    PyObject *parts = PyTuple_GET_ITEM(t, META_CLAIMED);
    if (!PyTuple_CheckExact(parts)) {
        return GIVE_UP;
    }
    unsigned mask = 0;
    long last = -1;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(parts); i++) {
        long p;
        int status = tuples_read_long(PyTuple_GET_ITEM(parts, i), &p);
        if (status != 0) {
            return status;
        }
        if (p <= last || p >= 6) {
            return GIVE_UP;
        }
        mask |= 1u << p;
        last = p;
    }
    *claimed = mask;
    return tuples_read_long(PyTuple_GET_ITEM(t, META_GENERATION), generation);
}

static int read_member(const Context *c, PyObject *t, Member *m) {
    if (!is_named(t, c->member_type, GM_SIZE)) {
        return GIVE_UP;
    }
    long consumer;
    int status;
    if ((status = group_read_id(PyTuple_GET_ITEM(t, GM_MEMBER_ID), &m->id)) != 0 ||
        (status = read_inst(PyTuple_GET_ITEM(t, GM_GROUP_INSTANCE_ID), &m->inst)) != 0 ||
        (status = tuples_read_long(PyTuple_GET_ITEM(t, GM_CONSUMER), &consumer)) != 0 ||
        (status = tuples_read_long(PyTuple_GET_ITEM(t, GM_INCARNATION), &m->incarnation)) != 0 ||
        (status = read_metadata(PyTuple_GET_ITEM(t, GM_METADATA), &m->claimed, &m->claimedGeneration)) != 0 ||
        (status = tuples_read_bool(PyTuple_GET_ITEM(t, GM_AWAITING_JOIN), &m->awaitingJoin)) != 0 ||
        (status = tuples_read_bool(PyTuple_GET_ITEM(t, GM_AWAITING_SYNC), &m->awaitingSync)) != 0 ||
        (status = group_read_partitions(PyTuple_GET_ITEM(t, GM_ASSIGNMENT), &m->assignment)) != 0 ||
        (status = tuples_read_bool(PyTuple_GET_ITEM(t, GM_IS_NEW), &m->isNew)) != 0 ||
        (status = tuples_read_bool(PyTuple_GET_ITEM(t, GM_CONNECTED), &m->connected)) != 0) {
        return status;
    }
    if (m->id == NO_ID || consumer < 0 || consumer >= MAX_PROCESSES) {
        return GIVE_UP;
    }
    m->consumer = (int)consumer;
    m->src = t;
    return 0;
}

/* A members tuple, sorted by member id with no id twice. */
static int read_members(const Context *c, PyObject *t, Member *m, int *n) {
    if (!PyTuple_CheckExact(t) || PyTuple_GET_SIZE(t) > MAX_MEMBERS) {
        return GIVE_UP;
    }
    *n = (int)PyTuple_GET_SIZE(t);
    for (int i = 0; i < *n; i++) {
        int status = read_member(c, PyTuple_GET_ITEM(t, i), &m[i]);
        if (status != 0) {
            return status;
        }
        if (i > 0 && group_id_rank[m[i - 1].id] >= group_id_rank[m[i].id]) {
            return GIVE_UP;
        }
    }
    return 0;
}

static int read_request(const Context *c, PyObject *t, Req *q) {
    memset(q, 0, sizeof *q);
    if (t == Py_None) {
        return 0;
    }
    if (!is_named(t, c->request_type, REQ_SIZE)) {
        return GIVE_UP;
    }
    q->present = 1;
    q->src = t;
    int status;
    if ((status = read_name(PyTuple_GET_ITEM(t, REQ_API), c->apis, &q->api)) != 0 ||
        (status = group_read_id(PyTuple_GET_ITEM(t, REQ_MEMBER_ID), &q->id)) != 0 ||
        (status = tuples_read_long(PyTuple_GET_ITEM(t, REQ_GENERATION_ID), &q->generationId)) != 0 ||
        (status = read_metadata(PyTuple_GET_ITEM(t, REQ_METADATA), &q->claimed, &q->claimedGeneration)) != 0) {
        return status;
    }
    PyObject *assignment = PyTuple_GET_ITEM(t, REQ_ASSIGNMENT);
    if (!PyTuple_CheckExact(assignment) || PyTuple_GET_SIZE(assignment) > MAX_MEMBERS) {
        return GIVE_UP;
    }
    q->assignment_src = assignment;
    q->nassign = (int)PyTuple_GET_SIZE(assignment);
    for (int i = 0; i < q->nassign; i++) {
        PyObject *pair = PyTuple_GET_ITEM(assignment, i);
        if (!PyTuple_CheckExact(pair) || PyTuple_GET_SIZE(pair) != ASSIGN_SIZE) {
            return GIVE_UP;
        }
        if ((status = group_read_id(PyTuple_GET_ITEM(pair, ASSIGN_MEMBER_ID), &q->assignId[i])) != 0 ||
            (status = group_read_partitions(PyTuple_GET_ITEM(pair, ASSIGN_PARTITIONS), &q->assignMask[i])) != 0) {
            return status;
        }
    }
    return 0;
}

static int read_response(const Context *c, PyObject *t, Resp *r) {
    memset(r, 0, sizeof *r);
    if (t == Py_None) {
        return 0;
    }
    if (!is_named(t, c->response_type, RESP_SIZE)) {
        return GIVE_UP;
    }
    r->present = 1;
    r->src = t;
    int status;
    if ((status = read_name(PyTuple_GET_ITEM(t, RESP_API), c->apis, &r->api)) != 0 ||
        (status = read_name(PyTuple_GET_ITEM(t, RESP_ERROR), c->errors, &r->error)) != 0 ||
        (status = group_read_id(PyTuple_GET_ITEM(t, RESP_MEMBER_ID), &r->id)) != 0 ||
        (status = tuples_read_long(PyTuple_GET_ITEM(t, RESP_GENERATION_ID), &r->generationId)) != 0 ||
        (status = group_read_id(PyTuple_GET_ITEM(t, RESP_LEADER_ID), &r->leaderId)) != 0 ||
        (status = group_read_partitions(PyTuple_GET_ITEM(t, RESP_ASSIGNMENT), &r->assignment)) != 0) {
        return status;
    }
    PyObject *members = PyTuple_GET_ITEM(t, RESP_MEMBERS);
    if (!PyTuple_CheckExact(members) || PyTuple_GET_SIZE(members) > MAX_MEMBERS) {
        return GIVE_UP;
    }
    r->members_src = members;
    r->nmembers = (int)PyTuple_GET_SIZE(members);
    for (int i = 0; i < r->nmembers; i++) {
        PyObject *triple = PyTuple_GET_ITEM(members, i);
        if (!PyTuple_CheckExact(triple) || PyTuple_GET_SIZE(triple) != SUB_SIZE) {
            return GIVE_UP;
        }
        if ((status = group_read_id(PyTuple_GET_ITEM(triple, SUB_MEMBER_ID), &r->memberId[i])) != 0 ||
            (status = read_inst(PyTuple_GET_ITEM(triple, SUB_INSTANCE_ID), &r->memberInst[i])) != 0 ||
            (status = read_metadata(PyTuple_GET_ITEM(triple, SUB_METADATA), &r->memberClaimed[i],
                                    &r->memberGeneration[i])) != 0) {
            return status;
        }
    }
    return 0;
}

static int read_consumer(const Context *c, PyObject *t, Cons *me) {
    if (!is_named(t, c->consumer_type, CS_SIZE)) {
        return GIVE_UP;
    }
    me->src = t;
    int status;
    if ((status = read_name(PyTuple_GET_ITEM(t, CS_PHASE), c->phases, &me->phase)) != 0 ||
        (status = group_read_id(PyTuple_GET_ITEM(t, CS_MEMBER_ID), &me->id)) != 0 ||
        (status = tuples_read_long(PyTuple_GET_ITEM(t, CS_GENERATION_ID), &me->generationId)) != 0 ||
        (status = group_read_partitions(PyTuple_GET_ITEM(t, CS_OWNED), &me->owned)) != 0 ||
        (status = group_read_partitions(PyTuple_GET_ITEM(t, CS_ASSIGNED), &me->assigned)) != 0 ||
        (status = read_request(c, PyTuple_GET_ITEM(t, CS_REQUEST), &me->request)) != 0 ||
        (status = read_response(c, PyTuple_GET_ITEM(t, CS_RESPONSE), &me->response)) != 0 ||
        (status = tuples_read_long(PyTuple_GET_ITEM(t, CS_INCARNATION), &me->incarnation)) != 0 ||
        (status = tuples_read_bool(PyTuple_GET_ITEM(t, CS_REJOIN_REQUESTED), &me->rejoinRequested)) != 0 ||
        (status = tuples_read_bool(PyTuple_GET_ITEM(t, CS_STALLED), &me->stalled)) != 0 ||
        (status = tuples_read_long(PyTuple_GET_ITEM(t, CS_ASSIGNED_GENERATION), &me->assignedGeneration)) != 0) {
        return status;
    }
    return 0;
}

int group_read_state(const Context *c, PyObject *t, S *s) {
    s->g.has_stored = 0; /* every other field is read, or past a count */
    if (!is_named(t, c->state_type, S_SIZE)) {
        return GIVE_UP;
    }
    s->src = t;
    int status;
    if ((status = tuples_read_long(PyTuple_GET_ITEM(t, S_FAULTS), &s->faults)) != 0) {
        return status;
    }
    PyObject *consumers = PyTuple_GET_ITEM(t, S_CONSUMERS);
    if (!PyTuple_CheckExact(consumers) || PyTuple_GET_SIZE(consumers) > MAX_PROCESSES) {
        return GIVE_UP;
    }
    s->nc = (int)PyTuple_GET_SIZE(consumers);
    for (int i = 0; i < s->nc; i++) {
        if ((status = read_consumer(c, PyTuple_GET_ITEM(consumers, i), &s->c[i])) != 0) {
            return status;
        }
    }
    PyObject *g = PyTuple_GET_ITEM(t, S_GROUP);
    if (!is_named(g, c->group_type, G_SIZE)) {
        return GIVE_UP;
    }
    Grp *grp = &s->g;
    grp->src = g;
    grp->members_src = PyTuple_GET_ITEM(g, G_MEMBERS);
    grp->pending_src = PyTuple_GET_ITEM(g, G_PENDING_MEMBERS);
    grp->pending_sync_src = PyTuple_GET_ITEM(g, G_PENDING_SYNC_MEMBERS);
    if ((status = read_name(PyTuple_GET_ITEM(g, G_STATE), c->group_states, &grp->state)) != 0 ||
        (status = tuples_read_long(PyTuple_GET_ITEM(g, G_GENERATION_ID), &grp->generationId)) != 0 ||
        (status = group_read_id(PyTuple_GET_ITEM(g, G_LEADER_ID), &grp->leaderId)) != 0 ||
        (status = read_members(c, grp->members_src, grp->m, &grp->n)) != 0 ||
        (status = read_ids(grp->pending_src, &grp->pending)) != 0 ||
        (status = read_ids(grp->pending_sync_src, &grp->pendingSync)) != 0 ||
        (status = read_name(PyTuple_GET_ITEM(g, G_JOIN_DELAY), c->delays, &grp->joinDelay)) != 0 ||
        (status = tuples_read_bool(PyTuple_GET_ITEM(g, G_NEW_MEMBER_ADDED), &grp->newMemberAdded)) != 0 ||
        (status = tuples_read_long(PyTuple_GET_ITEM(g, G_DELAY_EXTENSIONS_LEFT), &grp->delayExtensionsLeft)) != 0) {
        return status;
    }
    PyObject *stored = PyTuple_GET_ITEM(g, G_STORED);
    if (stored != Py_None) {
        if (!is_named(stored, c->stored_type, SG_SIZE)) {
            return GIVE_UP;
        }
        grp->has_stored = 1;
        grp->stored.src = stored;
        grp->stored.members_src = PyTuple_GET_ITEM(stored, SG_MEMBERS);
        if ((status = tuples_read_long(PyTuple_GET_ITEM(stored, SG_GENERATION_ID), &grp->stored.generationId)) != 0 ||
            (status = group_read_id(PyTuple_GET_ITEM(stored, SG_LEADER_ID), &grp->stored.leaderId)) != 0 ||
            (status = read_members(c, grp->stored.members_src, grp->stored.m, &grp->stored.n)) != 0) {
            return status;
        }
    }
    for (int i = 0; i < grp->n; i++) {
        if (grp->m[i].consumer >= s->nc) {
            return GIVE_UP;
        }
    }
    return 0;
}
