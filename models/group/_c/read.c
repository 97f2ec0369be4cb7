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
    if (!PyTuple_CheckExact(t) || PyTuple_GET_SIZE(t) != 2) {
        return GIVE_UP;
    }
    PyObject *parts = PyTuple_GET_ITEM(t, 0);
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
    return tuples_read_long(PyTuple_GET_ITEM(t, 1), generation);
}

static int read_member(const Context *c, PyObject *t, Member *m) {
    if (!is_named(t, c->member_type, 10)) {
        return GIVE_UP;
    }
    long consumer;
    int status;
    if ((status = group_read_id(PyTuple_GET_ITEM(t, 0), &m->id)) != 0 ||
        (status = read_inst(PyTuple_GET_ITEM(t, 1), &m->inst)) != 0 ||
        (status = tuples_read_long(PyTuple_GET_ITEM(t, 2), &consumer)) != 0 ||
        (status = tuples_read_long(PyTuple_GET_ITEM(t, 3), &m->incarnation)) != 0 ||
        (status = read_metadata(PyTuple_GET_ITEM(t, 4), &m->claimed, &m->claimedGeneration)) != 0 ||
        (status = tuples_read_bool(PyTuple_GET_ITEM(t, 5), &m->awaitingJoin)) != 0 ||
        (status = tuples_read_bool(PyTuple_GET_ITEM(t, 6), &m->awaitingSync)) != 0 ||
        (status = group_read_partitions(PyTuple_GET_ITEM(t, 7), &m->assignment)) != 0 ||
        (status = tuples_read_bool(PyTuple_GET_ITEM(t, 8), &m->isNew)) != 0 ||
        (status = tuples_read_bool(PyTuple_GET_ITEM(t, 9), &m->connected)) != 0) {
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
    if (!is_named(t, c->request_type, 5)) {
        return GIVE_UP;
    }
    q->present = 1;
    q->src = t;
    int status;
    if ((status = read_name(PyTuple_GET_ITEM(t, 0), c->apis, &q->api)) != 0 ||
        (status = group_read_id(PyTuple_GET_ITEM(t, 1), &q->id)) != 0 ||
        (status = tuples_read_long(PyTuple_GET_ITEM(t, 2), &q->generationId)) != 0 ||
        (status = read_metadata(PyTuple_GET_ITEM(t, 3), &q->claimed, &q->claimedGeneration)) != 0) {
        return status;
    }
    PyObject *assignment = PyTuple_GET_ITEM(t, 4);
    if (!PyTuple_CheckExact(assignment) || PyTuple_GET_SIZE(assignment) > MAX_MEMBERS) {
        return GIVE_UP;
    }
    q->assignment_src = assignment;
    q->nassign = (int)PyTuple_GET_SIZE(assignment);
    for (int i = 0; i < q->nassign; i++) {
        PyObject *pair = PyTuple_GET_ITEM(assignment, i);
        if (!PyTuple_CheckExact(pair) || PyTuple_GET_SIZE(pair) != 2) {
            return GIVE_UP;
        }
        if ((status = group_read_id(PyTuple_GET_ITEM(pair, 0), &q->assignId[i])) != 0 ||
            (status = group_read_partitions(PyTuple_GET_ITEM(pair, 1), &q->assignMask[i])) != 0) {
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
    if (!is_named(t, c->response_type, 7)) {
        return GIVE_UP;
    }
    r->present = 1;
    r->src = t;
    int status;
    if ((status = read_name(PyTuple_GET_ITEM(t, 0), c->apis, &r->api)) != 0 ||
        (status = read_name(PyTuple_GET_ITEM(t, 1), c->errors, &r->error)) != 0 ||
        (status = group_read_id(PyTuple_GET_ITEM(t, 2), &r->id)) != 0 ||
        (status = tuples_read_long(PyTuple_GET_ITEM(t, 3), &r->generationId)) != 0 ||
        (status = group_read_id(PyTuple_GET_ITEM(t, 4), &r->leaderId)) != 0 ||
        (status = group_read_partitions(PyTuple_GET_ITEM(t, 6), &r->assignment)) != 0) {
        return status;
    }
    PyObject *members = PyTuple_GET_ITEM(t, 5);
    if (!PyTuple_CheckExact(members) || PyTuple_GET_SIZE(members) > MAX_MEMBERS) {
        return GIVE_UP;
    }
    r->members_src = members;
    r->nmembers = (int)PyTuple_GET_SIZE(members);
    for (int i = 0; i < r->nmembers; i++) {
        PyObject *triple = PyTuple_GET_ITEM(members, i);
        if (!PyTuple_CheckExact(triple) || PyTuple_GET_SIZE(triple) != 3) {
            return GIVE_UP;
        }
        if ((status = group_read_id(PyTuple_GET_ITEM(triple, 0), &r->memberId[i])) != 0 ||
            (status = read_inst(PyTuple_GET_ITEM(triple, 1), &r->memberInst[i])) != 0 ||
            (status = read_metadata(PyTuple_GET_ITEM(triple, 2), &r->memberClaimed[i], &r->memberGeneration[i])) !=
                0) {
            return status;
        }
    }
    return 0;
}

static int read_consumer(const Context *c, PyObject *t, Cons *me) {
    if (!is_named(t, c->consumer_type, 11)) {
        return GIVE_UP;
    }
    me->src = t;
    int status;
    if ((status = read_name(PyTuple_GET_ITEM(t, 0), c->phases, &me->phase)) != 0 ||
        (status = group_read_id(PyTuple_GET_ITEM(t, 1), &me->id)) != 0 ||
        (status = tuples_read_long(PyTuple_GET_ITEM(t, 2), &me->generationId)) != 0 ||
        (status = group_read_partitions(PyTuple_GET_ITEM(t, 3), &me->owned)) != 0 ||
        (status = group_read_partitions(PyTuple_GET_ITEM(t, 4), &me->assigned)) != 0 ||
        (status = read_request(c, PyTuple_GET_ITEM(t, 5), &me->request)) != 0 ||
        (status = read_response(c, PyTuple_GET_ITEM(t, 6), &me->response)) != 0 ||
        (status = tuples_read_long(PyTuple_GET_ITEM(t, 7), &me->incarnation)) != 0 ||
        (status = tuples_read_bool(PyTuple_GET_ITEM(t, 8), &me->rejoinRequested)) != 0 ||
        (status = tuples_read_bool(PyTuple_GET_ITEM(t, 9), &me->stalled)) != 0 ||
        (status = tuples_read_long(PyTuple_GET_ITEM(t, 10), &me->assignedGeneration)) != 0) {
        return status;
    }
    return 0;
}

int group_read_state(const Context *c, PyObject *t, S *s) {
    s->g.has_stored = 0; /* every other field is read, or past a count */
    if (!is_named(t, c->state_type, 3)) {
        return GIVE_UP;
    }
    s->src = t;
    int status;
    if ((status = tuples_read_long(PyTuple_GET_ITEM(t, 2), &s->faults)) != 0) {
        return status;
    }
    PyObject *consumers = PyTuple_GET_ITEM(t, 1);
    if (!PyTuple_CheckExact(consumers) || PyTuple_GET_SIZE(consumers) > MAX_PROCESSES) {
        return GIVE_UP;
    }
    s->nc = (int)PyTuple_GET_SIZE(consumers);
    for (int i = 0; i < s->nc; i++) {
        if ((status = read_consumer(c, PyTuple_GET_ITEM(consumers, i), &s->c[i])) != 0) {
            return status;
        }
    }
    PyObject *g = PyTuple_GET_ITEM(t, 0);
    if (!is_named(g, c->group_type, 10)) {
        return GIVE_UP;
    }
    Grp *grp = &s->g;
    grp->src = g;
    grp->members_src = PyTuple_GET_ITEM(g, 3);
    grp->pending_src = PyTuple_GET_ITEM(g, 4);
    grp->pending_sync_src = PyTuple_GET_ITEM(g, 5);
    if ((status = read_name(PyTuple_GET_ITEM(g, 0), c->group_states, &grp->state)) != 0 ||
        (status = tuples_read_long(PyTuple_GET_ITEM(g, 1), &grp->generationId)) != 0 ||
        (status = group_read_id(PyTuple_GET_ITEM(g, 2), &grp->leaderId)) != 0 ||
        (status = read_members(c, grp->members_src, grp->m, &grp->n)) != 0 ||
        (status = read_ids(grp->pending_src, &grp->pending)) != 0 ||
        (status = read_ids(grp->pending_sync_src, &grp->pendingSync)) != 0 ||
        (status = read_name(PyTuple_GET_ITEM(g, 6), c->delays, &grp->joinDelay)) != 0 ||
        (status = tuples_read_bool(PyTuple_GET_ITEM(g, 7), &grp->newMemberAdded)) != 0 ||
        (status = tuples_read_long(PyTuple_GET_ITEM(g, 8), &grp->delayExtensionsLeft)) != 0) {
        return status;
    }
    PyObject *stored = PyTuple_GET_ITEM(g, 9);
    if (stored != Py_None) {
        if (!is_named(stored, c->stored_type, 3)) {
            return GIVE_UP;
        }
        grp->has_stored = 1;
        grp->stored.src = stored;
        grp->stored.members_src = PyTuple_GET_ITEM(stored, 2);
        if ((status = tuples_read_long(PyTuple_GET_ITEM(stored, 0), &grp->stored.generationId)) != 0 ||
            (status = group_read_id(PyTuple_GET_ITEM(stored, 1), &grp->stored.leaderId)) != 0 ||
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
