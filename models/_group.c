/* The successor function of models/group.py, in C: the same steps, in the same order, built from
 * the same NamedTuple types and action labels, for every flag of the model.
 *
 * successors(ctx, state) returns the list GroupModel._successors(state) returns, or None when the
 * state is outside the sizes this code handles (the caller then runs the Python). ctx is the tuple
 * GroupModel._fast_context() builds: the state types, the model's strings, its action-label cache
 * and its configuration as small ints. The leader's assignor is not ported: the C calls the
 * model's _run_assignor (cached by subscriptions) where the Python does. The state is read into C
 * structs, each step works on a copy, and a successor reuses every tuple of the state it did not
 * change. The Python stays the definition; tests compare the two on every reachable state.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define MAX_PROCESSES 5
#define MAX_MEMBERS 8
#define IDS_PER_CONSUMER 12
#define MAX_IDS (MAX_PROCESSES * IDS_PER_CONSUMER) /* member "c<c>-<n>" is id c * 12 + n */
#define MAX_PARTITION_MASK 64
#define NO_ID (-1)
#define GIVE_UP 1

/* The strings of the model, in the order of the context's tuples. */
enum { EMPTY, PREPARING_REBALANCE, COMPLETING_REBALANCE, STABLE, DEAD, N_GROUP_STATES };
enum { STOPPED, UNJOINED, JOINING, SYNCING, CONSUMING, FENCED, N_PHASES };
enum {
    NONE,
    UNKNOWN_MEMBER_ID,
    ILLEGAL_GENERATION,
    REBALANCE_IN_PROGRESS,
    MEMBER_ID_REQUIRED,
    FENCED_INSTANCE_ID,
    NOT_COORDINATOR,
    COORDINATOR_NOT_AVAILABLE,
    ASSIGNOR_FAILED,
    N_ERRORS
};
enum { JOIN_GROUP, SYNC_GROUP, N_APIS };
enum { DELAY_NONE, DELAY_INITIAL, DELAY_JOIN, N_DELAYS };
enum { CLAIMS_NONE, CLAIMS_CURRENT, CLAIMS_ASSIGNMENT };

/* The actions, in the order of the context's name tuple. */
enum {
    A_SEND_JOIN,
    A_HANDLE_JOIN,
    A_HANDLE_SYNC,
    A_RECEIVE_JOIN,
    A_RECEIVE_SYNC,
    A_HEARTBEAT,
    A_OFFSET_COMMIT,
    A_LEAVE,
    A_CRASH,
    A_START,
    A_STALL,
    A_REQUEST_TIMEOUT,
    A_INITIAL_DELAY,
    A_REBALANCE_TIMEOUT,
    A_SYNC_TIMEOUT,
    A_SESSION_TIMEOUT,
    A_PAUSE,
    A_PENDING_TIMEOUT,
    A_NEW_MEMBER_TIMEOUT,
    A_UNLOAD,
    A_LOAD,
    N_ACTIONS
};

typedef struct {
    PyTypeObject *state_type, *group_type, *member_type, *stored_type, *consumer_type, *request_type,
        *response_type;
    PyObject *group_states, *phases, *errors, *apis, *delays, *action_names;
    PyObject *no_member; /* "" */
    PyObject *actions;   /* dict: C key -> Action, filled through act */
    PyObject *act;       /* the model's _act */
    PyObject *run_assignor;
    PyObject *empty_tuple;
    int consumers, cooperative, sticky, claims_generation, claimless_generation_matters, static_membership,
        require_known_member_id, new_member_join_timeout, pending_members_block_join, join_group_v0,
        v0_rebalance_timeout, initial_rebalance_delay, delay_extensions, delayed_sync,
        rebalance_static_rejoin_in_completing, join_prepare_after_reset, sync_rebalance_resets_generation,
        fence_replaced_static_member, persist_static_replacement, timeouts_any, max_faults, coordinator_failover,
        slow_coordinator, consumer_pauses, poll_stalls;
} Context;

typedef struct {
    int id, inst, consumer;
    long incarnation;
    unsigned claimed;
    long claimedGeneration;
    int awaitingJoin, awaitingSync, isNew, connected;
    unsigned assignment;
    PyObject *src; /* the tuple read, or NULL */
} Member;

typedef struct {
    int present, api, id;
    long generationId;
    unsigned claimed;
    long claimedGeneration;
    int nassign;
    int assignId[MAX_MEMBERS];
    unsigned assignMask[MAX_MEMBERS];
    PyObject *src, *assignment_src;
} Req;

typedef struct {
    int present, api, error, id;
    long generationId;
    int leaderId, nmembers;
    int memberId[MAX_MEMBERS], memberInst[MAX_MEMBERS];
    unsigned memberClaimed[MAX_MEMBERS];
    long memberGeneration[MAX_MEMBERS];
    unsigned assignment;
    PyObject *src, *members_src;
} Resp;

typedef struct {
    int phase, id;
    long generationId;
    unsigned owned, assigned;
    Req request;
    Resp response;
    long incarnation;
    int rejoinRequested, stalled;
    long assignedGeneration;
    PyObject *src;
} Cons;

typedef struct {
    long generationId;
    int leaderId, n;
    Member m[MAX_MEMBERS];
    PyObject *src, *members_src;
} Stored;

typedef struct {
    int state;
    long generationId;
    int leaderId, n;
    Member m[MAX_MEMBERS];
    uint64_t pending, pendingSync;
    int joinDelay, newMemberAdded;
    long delayExtensionsLeft;
    int has_stored;
    Stored stored;
    PyObject *src, *members_src, *pending_src, *pending_sync_src;
} Grp;

typedef struct {
    Grp g;
    int nc;
    Cons c[MAX_PROCESSES];
    long faults;
    PyObject *src;
} S;

/* -- module-wide caches of immutable values --------------------------------------------------------- */

static PyObject *id_strs[MAX_IDS], *inst_strs[MAX_PROCESSES], *partition_sets[MAX_PARTITION_MASK],
    *claim_tuples[MAX_PARTITION_MASK];
static int id_rank[MAX_IDS]; /* where each id's string sorts among all ids */

static void rank_ids(void) {
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
        id_rank[i] = r;
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
    if (partition_sets[mask] == NULL) {
        PyObject *set = PyFrozenSet_New(NULL);
        if (set == NULL) {
            return NULL;
        }
        for (int p = 0; p < 6; p++) {
            if (mask & (1u << p)) {
                PyObject *v = PyLong_FromLong(p);
                if (v == NULL || PySet_Add(set, v) < 0) {
                    Py_XDECREF(v);
                    Py_DECREF(set);
                    return NULL;
                }
                Py_DECREF(v);
            }
        }
        partition_sets[mask] = set;
    }
    return Py_NewRef(partition_sets[mask]);
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

/* -- reading ------------------------------------------------------------------------------------- */

static int read_long(PyObject *value, long *out) {
    if (!PyLong_CheckExact(value)) {
        return GIVE_UP;
    }
    long v = PyLong_AsLong(value);
    if (v == -1 && PyErr_Occurred()) {
        return -1;
    }
    *out = v;
    return 0;
}

static int read_bool(PyObject *value, int *out) {
    if (value == Py_True) {
        *out = 1;
    } else if (value == Py_False) {
        *out = 0;
    } else {
        return GIVE_UP;
    }
    return 0;
}

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
static int read_id(PyObject *value, int *out) {
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

/* The elements of a frozenset of at most ``max`` elements, borrowed; -1, or their number. */
static Py_ssize_t set_items(PyObject *set, PyObject **items, Py_ssize_t max) {
    Py_ssize_t n = PySet_GET_SIZE(set);
    if (n > max) {
        return n;
    }
    Py_ssize_t i = 0;
#if PY_VERSION_HEX < 0x030D0000
    Py_ssize_t pos = 0;
    Py_hash_t hash;
    while (i < n && _PySet_NextEntry(set, &pos, &items[i], &hash)) {
        i++;
    }
#else
    PyObject *iter = PyObject_GetIter(set), *key;
    if (iter == NULL) {
        return -1;
    }
    while (i < n && (key = PyIter_Next(iter)) != NULL) {
        items[i++] = key;
        Py_DECREF(key);
    }
    Py_DECREF(iter);
    if (PyErr_Occurred()) {
        return -1;
    }
#endif
    return i;
}

static int read_partitions(PyObject *set, unsigned *out) {
    if (!PyFrozenSet_CheckExact(set)) {
        return GIVE_UP;
    }
    PyObject *items[8];
    Py_ssize_t n = set_items(set, items, 6);
    if (n < 0 || n > 6) {
        return n < 0 ? -1 : GIVE_UP;
    }
    unsigned mask = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        long p;
        int status = read_long(items[i], &p);
        if (status != 0) {
            return status;
        }
        if (p < 0 || p >= 6) {
            return GIVE_UP;
        }
        mask |= 1u << p;
    }
    *out = mask;
    return 0;
}

static int read_ids(PyObject *set, uint64_t *out) {
    if (!PyFrozenSet_CheckExact(set)) {
        return GIVE_UP;
    }
    PyObject *items[MAX_IDS];
    Py_ssize_t n = set_items(set, items, MAX_IDS);
    if (n < 0 || n > MAX_IDS) {
        return n < 0 ? -1 : GIVE_UP;
    }
    uint64_t mask = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        int id, status = read_id(items[i], &id);
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
        int status = read_long(PyTuple_GET_ITEM(parts, i), &p);
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
    return read_long(PyTuple_GET_ITEM(t, 1), generation);
}

static int is_named(PyObject *t, PyTypeObject *type, Py_ssize_t size) {
    return Py_TYPE(t) == type && PyTuple_GET_SIZE(t) == size;
}

static int read_member(const Context *c, PyObject *t, Member *m) {
    if (!is_named(t, c->member_type, 10)) {
        return GIVE_UP;
    }
    long consumer;
    int status;
    if ((status = read_id(PyTuple_GET_ITEM(t, 0), &m->id)) != 0 ||
        (status = read_inst(PyTuple_GET_ITEM(t, 1), &m->inst)) != 0 ||
        (status = read_long(PyTuple_GET_ITEM(t, 2), &consumer)) != 0 ||
        (status = read_long(PyTuple_GET_ITEM(t, 3), &m->incarnation)) != 0 ||
        (status = read_metadata(PyTuple_GET_ITEM(t, 4), &m->claimed, &m->claimedGeneration)) != 0 ||
        (status = read_bool(PyTuple_GET_ITEM(t, 5), &m->awaitingJoin)) != 0 ||
        (status = read_bool(PyTuple_GET_ITEM(t, 6), &m->awaitingSync)) != 0 ||
        (status = read_partitions(PyTuple_GET_ITEM(t, 7), &m->assignment)) != 0 ||
        (status = read_bool(PyTuple_GET_ITEM(t, 8), &m->isNew)) != 0 ||
        (status = read_bool(PyTuple_GET_ITEM(t, 9), &m->connected)) != 0) {
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
        if (i > 0 && id_rank[m[i - 1].id] >= id_rank[m[i].id]) {
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
        (status = read_id(PyTuple_GET_ITEM(t, 1), &q->id)) != 0 ||
        (status = read_long(PyTuple_GET_ITEM(t, 2), &q->generationId)) != 0 ||
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
        if ((status = read_id(PyTuple_GET_ITEM(pair, 0), &q->assignId[i])) != 0 ||
            (status = read_partitions(PyTuple_GET_ITEM(pair, 1), &q->assignMask[i])) != 0) {
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
        (status = read_id(PyTuple_GET_ITEM(t, 2), &r->id)) != 0 ||
        (status = read_long(PyTuple_GET_ITEM(t, 3), &r->generationId)) != 0 ||
        (status = read_id(PyTuple_GET_ITEM(t, 4), &r->leaderId)) != 0 ||
        (status = read_partitions(PyTuple_GET_ITEM(t, 6), &r->assignment)) != 0) {
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
        if ((status = read_id(PyTuple_GET_ITEM(triple, 0), &r->memberId[i])) != 0 ||
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
        (status = read_id(PyTuple_GET_ITEM(t, 1), &me->id)) != 0 ||
        (status = read_long(PyTuple_GET_ITEM(t, 2), &me->generationId)) != 0 ||
        (status = read_partitions(PyTuple_GET_ITEM(t, 3), &me->owned)) != 0 ||
        (status = read_partitions(PyTuple_GET_ITEM(t, 4), &me->assigned)) != 0 ||
        (status = read_request(c, PyTuple_GET_ITEM(t, 5), &me->request)) != 0 ||
        (status = read_response(c, PyTuple_GET_ITEM(t, 6), &me->response)) != 0 ||
        (status = read_long(PyTuple_GET_ITEM(t, 7), &me->incarnation)) != 0 ||
        (status = read_bool(PyTuple_GET_ITEM(t, 8), &me->rejoinRequested)) != 0 ||
        (status = read_bool(PyTuple_GET_ITEM(t, 9), &me->stalled)) != 0 ||
        (status = read_long(PyTuple_GET_ITEM(t, 10), &me->assignedGeneration)) != 0) {
        return status;
    }
    return 0;
}

static int read_state(const Context *c, PyObject *t, S *s) {
    s->g.has_stored = 0; /* every other field is read, or past a count */
    if (!is_named(t, c->state_type, 3)) {
        return GIVE_UP;
    }
    s->src = t;
    int status;
    if ((status = read_long(PyTuple_GET_ITEM(t, 2), &s->faults)) != 0) {
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
        (status = read_long(PyTuple_GET_ITEM(g, 1), &grp->generationId)) != 0 ||
        (status = read_id(PyTuple_GET_ITEM(g, 2), &grp->leaderId)) != 0 ||
        (status = read_members(c, grp->members_src, grp->m, &grp->n)) != 0 ||
        (status = read_ids(grp->pending_src, &grp->pending)) != 0 ||
        (status = read_ids(grp->pending_sync_src, &grp->pendingSync)) != 0 ||
        (status = read_name(PyTuple_GET_ITEM(g, 6), c->delays, &grp->joinDelay)) != 0 ||
        (status = read_bool(PyTuple_GET_ITEM(g, 7), &grp->newMemberAdded)) != 0 ||
        (status = read_long(PyTuple_GET_ITEM(g, 8), &grp->delayExtensionsLeft)) != 0) {
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
        if ((status = read_long(PyTuple_GET_ITEM(stored, 0), &grp->stored.generationId)) != 0 ||
            (status = read_id(PyTuple_GET_ITEM(stored, 1), &grp->stored.leaderId)) != 0 ||
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

static int group_eq(const Grp *a, const Grp *b) {
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

static PyObject *new_tuple(PyTypeObject *type, Py_ssize_t size, PyObject **items) {
    for (Py_ssize_t i = 0; i < size; i++) {
        if (items[i] == NULL) {
            for (Py_ssize_t j = 0; j < size; j++) {
                Py_XDECREF(items[j]);
            }
            return NULL;
        }
    }
    PyObject *t = type == NULL ? PyTuple_New(size) : type->tp_alloc(type, size);
    if (t == NULL) {
        for (Py_ssize_t j = 0; j < size; j++) {
            Py_DECREF(items[j]);
        }
        return NULL;
    }
    for (Py_ssize_t i = 0; i < size; i++) {
        PyTuple_SET_ITEM(t, i, items[i]);
    }
    return t;
}

static PyObject *name(PyObject *names, int i) { return Py_NewRef(PyTuple_GET_ITEM(names, i)); }
static PyObject *boolean(int b) { return Py_NewRef(b ? Py_True : Py_False); }

static PyObject *metadata(unsigned claimed, long generation) {
    PyObject *items[2] = {claim_tuple(claimed), PyLong_FromLong(generation)};
    return new_tuple(NULL, 2, items);
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
    PyObject *items[10] = {id_str(c, m->id),         inst_str(m->inst),        PyLong_FromLong(m->consumer),
                           PyLong_FromLong(m->incarnation), metadata(m->claimed, m->claimedGeneration),
                           boolean(m->awaitingJoin), boolean(m->awaitingSync), partition_set(m->assignment),
                           boolean(m->isNew),        boolean(m->connected)};
    return new_tuple(c->member_type, 10, items);
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
        PyObject *items[3] = {PyLong_FromLong(g->stored.generationId), id_str(c, g->stored.leaderId),
                              build_members(c, orig, g->stored.m, g->stored.n)};
        stored = new_tuple(c->stored_type, 3, items);
    }
    PyObject *items[10] = {
        name(c->group_states, g->state),
        PyLong_FromLong(g->generationId),
        id_str(c, g->leaderId),
        build_members(c, orig, g->m, g->n),
        g->pending == o->pending ? Py_NewRef(o->pending_src) : id_set(c, g->pending),
        g->pendingSync == o->pendingSync ? Py_NewRef(o->pending_sync_src) : id_set(c, g->pendingSync),
        name(c->delays, g->joinDelay),
        boolean(g->newMemberAdded),
        PyLong_FromLong(g->delayExtensionsLeft),
        stored,
    };
    return new_tuple(c->group_type, 10, items);
}

static PyObject *build_request(const Context *c, const Req *orig, const Req *q) {
    if (!q->present) {
        Py_RETURN_NONE;
    }
    if (request_eq(q, orig)) {
        return Py_NewRef(orig->src);
    }
    PyObject *assignment = Py_NewRef(q->assignment_src); /* (), or the assignor's answer */
    PyObject *items[5] = {name(c->apis, q->api), id_str(c, q->id), PyLong_FromLong(q->generationId),
                          metadata(q->claimed, q->claimedGeneration), assignment};
    return new_tuple(c->request_type, 5, items);
}

static PyObject *build_response_members(const Context *c, const Resp *r) {
    PyObject *t = PyTuple_New(r->nmembers);
    if (t == NULL) {
        return NULL;
    }
    for (int i = 0; i < r->nmembers; i++) {
        PyObject *items[3] = {id_str(c, r->memberId[i]), inst_str(r->memberInst[i]),
                              metadata(r->memberClaimed[i], r->memberGeneration[i])};
        PyObject *triple = new_tuple(NULL, 3, items);
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
                                                                         : build_response_members(c, r);
    PyObject *items[7] = {name(c->apis, r->api),           name(c->errors, r->error), id_str(c, r->id),
                          PyLong_FromLong(r->generationId), id_str(c, r->leaderId),   members,
                          partition_set(r->assignment)};
    return new_tuple(c->response_type, 7, items);
}

static PyObject *build_consumer(const Context *c, const Cons *orig, const Cons *me) {
    if (consumer_eq(me, orig)) {
        return Py_NewRef(orig->src);
    }
    PyObject *items[11] = {name(c->phases, me->phase),
                           id_str(c, me->id),
                           PyLong_FromLong(me->generationId),
                           partition_set(me->owned),
                           partition_set(me->assigned),
                           build_request(c, &orig->request, &me->request),
                           build_response(c, &orig->response, &me->response),
                           PyLong_FromLong(me->incarnation),
                           boolean(me->rejoinRequested),
                           boolean(me->stalled),
                           PyLong_FromLong(me->assignedGeneration)};
    return new_tuple(c->consumer_type, 11, items);
}

static PyObject *build_state(const Context *c, const S *orig, const S *s) {
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
    PyObject *items[3] = {group, consumers, PyLong_FromLong(s->faults)};
    return new_tuple(c->state_type, 3, items);
}

/* -- action labels -------------------------------------------------------------------------------- */

/* The model's Action for (kind, consumer, error, member id, generation), through its own cache. */
static PyObject *action(const Context *c, int kind, int consumer, int error, int id, long generation) {
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

/* -- the group's helpers (group_state.py) ------------------------------------------------------------ */

static int find_member(const Grp *g, int id) {
    for (int i = 0; i < g->n; i++) {
        if (g->m[i].id == id) {
            return i;
        }
    }
    return -1;
}

static void update_member(Grp *g, const Member *m) {
    int i = find_member(g, m->id);
    if (i >= 0) {
        g->m[i] = *m;
    }
}

/* Adds a member where sorted() puts it; GIVE_UP when it does not fit. */
static int insert_member(Grp *g, const Member *m) {
    if (g->n >= MAX_MEMBERS || find_member(g, m->id) >= 0) {
        return GIVE_UP;
    }
    int i = g->n++;
    while (i > 0 && id_rank[g->m[i - 1].id] > id_rank[m->id]) {
        g->m[i] = g->m[i - 1];
        i--;
    }
    g->m[i] = *m;
    return 0;
}

static void drop_member(Grp *g, int id) {
    int j = 0;
    for (int i = 0; i < g->n; i++) {
        if (g->m[i].id != id) {
            g->m[j++] = g->m[i];
        }
    }
    g->n = j;
}

static uint64_t bit(int id) { return id == NO_ID ? 0 : (uint64_t)1 << id; }

static void without_member(Grp *g, int id) {
    drop_member(g, id);
    if (g->leaderId == id) {
        g->leaderId = g->n ? g->m[0].id : NO_ID;
    }
    g->pendingSync &= ~bit(id);
}

static void store(Grp *g) {
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

static int holds_id(const Cons *me, int id) {
    if (me->phase == STOPPED || me->phase == FENCED) {
        return 0;
    }
    return me->id == id || (me->response.present && me->response.id == id);
}

static int behind(const Cons *me, const Member *m) {
    if (me->id == m->id) {
        return 1;
    }
    if (me->id != NO_ID) {
        return 0;
    }
    return (m->awaitingJoin && m->connected) || (me->response.present && me->response.id == m->id);
}

static void error_response(Resp *r, int api, int error) {
    memset(r, 0, sizeof *r);
    r->present = 1;
    r->api = api;
    r->error = error;
    r->id = NO_ID;
    r->generationId = -1;
    r->leaderId = NO_ID;
}

static void sync_response(Resp *r, unsigned assignment) {
    error_response(r, SYNC_GROUP, NONE);
    r->assignment = assignment;
}

static void join_response(const Grp *g, int id, Resp *r) {
    error_response(r, JOIN_GROUP, NONE);
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

static uint64_t mentioned_ids(const S *s) {
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
static int fresh_member_id(int consumer, uint64_t mentioned, int *out) {
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
static int emit(const Context *c, const S *orig, PyObject *out, PyObject *act, S *next) {
    if (act == NULL) {
        return -1;
    }
    if (!group_eq(&next->g, &orig->g)) {
        canonical(next);
    }
    normalise(next);
    PyObject *state = build_state(c, orig, next);
    if (state == NULL) {
        return -1;
    }
    PyObject *pair = PyTuple_New(2);
    if (pair == NULL) {
        Py_DECREF(state);
        return -1;
    }
    PyTuple_SET_ITEM(pair, 0, Py_NewRef(act));
    PyTuple_SET_ITEM(pair, 1, state);
    int status = PyList_Append(out, pair);
    Py_DECREF(pair);
    return status;
}

/* -- the coordinator (group_coordinator.py) ---------------------------------------------------------- */

static int instance_id(const Context *c, int consumer) {
    if (!c->static_membership) {
        return -1;
    }
    return consumer == c->consumers ? 0 : consumer;
}

static int member_error(const Grp *g, int id, int inst) {
    if (inst >= 0) {
        for (int i = 0; i < g->n; i++) {
            if (g->m[i].inst == inst) {
                return g->m[i].id == id ? NONE : FENCED_INSTANCE_ID;
            }
        }
        return UNKNOWN_MEMBER_ID;
    }
    return find_member(g, id) >= 0 ? NONE : UNKNOWN_MEMBER_ID;
}

static void respond(S *s, int consumer, const Resp *r) { s->c[consumer].response = *r; }

/* Completes a parked callback (``member`` as it was when the completion began). */
static void deliver(S *s, Member member, const Resp *r) {
    int i = find_member(&s->g, member.id);
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
        store(g);
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
            join_response(&completed, members[i].id, &r);
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
        error_response(&r, SYNC_GROUP, REBALANCE_IN_PROGRESS);
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
    if (insert_member(g, &m) != 0) {
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
        update_member(&s->g, &m);
        return;
    }
    Resp r;
    error_response(&r, old->awaitingJoin ? JOIN_GROUP : SYNC_GROUP, FENCED_INSTANCE_ID);
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
        update_member(g, &taken);
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
    drop_member(g, old.id);
    if (insert_member(g, &fresh) != 0) {
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
            store(g);
        }
        fresh.awaitingJoin = 0;
        update_member(g, &fresh);
        join_response(g, new_id, &r);
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
        update_member(g, &fresh);
        join_response(g, new_id, &r);
        respond(s, consumer, &r);
        return 0;
    }
    try_complete_join(c, s);
    return 0;
}

/* _handle_join: the error it answers with in *error. */
static int handle_join(const Context *c, S *s, int consumer, int *error) {
    Req request = s->c[consumer].request;
    s->c[consumer].request.present = 0;
    memset(&s->c[consumer].request, 0, sizeof(Req));
    Grp *g = &s->g;
    Resp r;
    *error = NONE;
    if (g->state == DEAD) {
        *error = COORDINATOR_NOT_AVAILABLE;
        error_response(&r, JOIN_GROUP, COORDINATOR_NOT_AVAILABLE);
        respond(s, consumer, &r);
        return 0;
    }
    int inst = instance_id(c, consumer);
    if (request.id == NO_ID) {
        int new_id;
        if (fresh_member_id(consumer, mentioned_ids(s), &new_id) != 0) {
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
            error_response(&r, JOIN_GROUP, MEMBER_ID_REQUIRED);
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
    *error = member_error(g, request.id, inst);
    if (*error != NONE) {
        error_response(&r, JOIN_GROUP, *error);
        respond(s, consumer, &r);
        return 0;
    }
    Member member = g->m[find_member(g, request.id)];
    Member parked = member;
    parked.claimed = request.claimed;
    parked.claimedGeneration = request.claimedGeneration;
    parked.awaitingJoin = 1;
    parked.consumer = consumer;
    parked.incarnation = s->c[consumer].incarnation;
    parked.connected = 1;
    int same_metadata = member.claimed == request.claimed && member.claimedGeneration == request.claimedGeneration;
    if (g->state == PREPARING_REBALANCE) {
        update_member(g, &parked);
        try_complete_join(c, s);
        return 0;
    }
    if (g->state == COMPLETING_REBALANCE) {
        if (same_metadata) {
            join_response(g, member.id, &r);
            respond(s, consumer, &r);
        } else {
            update_member(g, &parked);
            prepare_rebalance(c, s);
        }
        return 0;
    }
    if (member.id == g->leaderId || !same_metadata) {
        update_member(g, &parked);
        prepare_rebalance(c, s);
        return 0;
    }
    join_response(g, member.id, &r);
    respond(s, consumer, &r);
    return 0;
}

static int handle_sync(const Context *c, S *s, int consumer, int *error) {
    Req request = s->c[consumer].request;
    memset(&s->c[consumer].request, 0, sizeof(Req));
    Grp *g = &s->g;
    Resp r;
    if (g->state == DEAD) {
        *error = COORDINATOR_NOT_AVAILABLE;
        error_response(&r, SYNC_GROUP, COORDINATOR_NOT_AVAILABLE);
        respond(s, consumer, &r);
        return 0;
    }
    *error = member_error(g, request.id, instance_id(c, consumer));
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
        error_response(&r, SYNC_GROUP, *error);
        respond(s, consumer, &r);
        return 0;
    }
    Member member = g->m[find_member(g, request.id)];
    g->pendingSync &= ~bit(member.id);
    if (g->state == STABLE) {
        sync_response(&r, member.assignment);
        respond(s, consumer, &r);
        return 0;
    }
    Member synced = member;
    synced.awaitingSync = 1;
    synced.consumer = consumer;
    synced.incarnation = s->c[consumer].incarnation;
    synced.connected = 1;
    update_member(g, &synced);
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
    store(g);
    Member before[MAX_MEMBERS];
    int n = g->n;
    memcpy(before, g->m, sizeof(Member) * (size_t)n);
    for (int i = 0; i < n; i++) {
        if (before[i].awaitingSync) {
            sync_response(&r, before[i].assignment);
            deliver(s, before[i], &r);
        }
    }
    return 0;
}

static void remove_member_and_update_group(const Context *c, S *s, int id) {
    Grp *g = &s->g;
    Member member = g->m[find_member(g, id)];
    if (member.awaitingJoin || member.awaitingSync) {
        Resp r;
        error_response(&r, member.awaitingJoin ? JOIN_GROUP : SYNC_GROUP, UNKNOWN_MEMBER_ID);
        deliver(s, member, &r);
    }
    without_member(g, id);
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
        if (alive && behind(me, m) && (heartbeat_thread || !me->stalled)) {
            return 0;
        }
    }
    for (int id = 0; pending && id < MAX_IDS; id++) {
        if (!(pending & bit(id))) {
            continue;
        }
        for (int k = 0; k < s->nc; k++) {
            if (holds_id(&s->c[k], id)) {
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
    join_response(g, g->leaderId, &r);
    PyObject *members = r.nmembers ? build_response_members(c, &r) : Py_NewRef(c->empty_tuple);
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

static int coordinator_timers(const Context *c, const S *s, PyObject *out) {
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
        if (emit(c, s, out, action(c, A_INITIAL_DELAY, 0, 0, NO_ID, -1), &next) < 0) {
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
                emit(c, s, out, action(c, A_REBALANCE_TIMEOUT, 0, 0, NO_ID, -1), &next) < 0) {
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
                    without_member(&next.g, g->m[i].id);
                }
            }
            next.g.pendingSync = 0;
            prepare_rebalance(c, &next);
            if (emit(c, s, out, action(c, A_SYNC_TIMEOUT, 0, 0, NO_ID, -1), &next) < 0) {
                return -1;
            }
        }
    }
    for (int i = 0; i < g->n; i++) {
        const Member *m = &g->m[i];
        if (m->isNew && m->awaitingJoin) {
            int abandoned = !m->connected || may_expire(c, s, &i, 1, 0, 1);
            if (c->new_member_join_timeout && abandoned) {
                next = *s;
                remove_member_and_update_group(c, &next, m->id);
                if (emit(c, s, out, action(c, A_NEW_MEMBER_TIMEOUT, 0, 0, m->id, -1), &next) < 0) {
                    return -1;
                }
            }
        } else if (!(m->awaitingJoin || m->awaitingSync)) {
            if (may_expire(c, s, &i, 1, 0, 1)) {
                next = *s;
                remove_member_and_update_group(c, &next, m->id);
                if (emit(c, s, out, action(c, A_SESSION_TIMEOUT, 0, 0, m->id, -1), &next) < 0) {
                    return -1;
                }
            } else if (c->consumer_pauses && s->faults < c->max_faults) {
                next = *s;
                remove_member_and_update_group(c, &next, m->id);
                next.faults++;
                if (emit(c, s, out, action(c, A_PAUSE, 0, 0, m->id, -1), &next) < 0) {
                    return -1;
                }
            }
        }
    }
    if (g->pending) {
        int order[MAX_IDS], n_ids = 0;
        for (int id = 0; id < MAX_IDS; id++) {
            if (g->pending & bit(id)) {
                int k = n_ids++;
                while (k > 0 && id_rank[order[k - 1]] > id_rank[id]) {
                    order[k] = order[k - 1];
                    k--;
                }
                order[k] = id;
            }
        }
        for (int k = 0; k < n_ids; k++) {
            if (may_expire(c, s, NULL, 0, bit(order[k]), 0)) {
                next = *s;
                next.g.pending &= ~bit(order[k]);
                try_complete_join(c, &next);
                if (emit(c, s, out, action(c, A_PENDING_TIMEOUT, 0, 0, order[k], -1), &next) < 0) {
                    return -1;
                }
            }
        }
    }
    return 0;
}

static void unload(S *s) {
    Grp *g = &s->g;
    Member before[MAX_MEMBERS];
    int n = g->n;
    memcpy(before, g->m, sizeof(Member) * (size_t)n);
    for (int i = 0; i < n; i++) {
        if (before[i].awaitingJoin || before[i].awaitingSync) {
            Resp r;
            error_response(&r, before[i].awaitingJoin ? JOIN_GROUP : SYNC_GROUP, NOT_COORDINATOR);
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

static void load(S *s) {
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

/* -- the consumers (group_client.py) ----------------------------------------------------------------- */

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
    int status = api == JOIN_GROUP ? handle_join(c, &next, k, &error) : handle_sync(c, &next, k, &error);
    if (status != 0) {
        return status;
    }
    return emit(c, s, out, action(c, api == JOIN_GROUP ? A_HANDLE_JOIN : A_HANDLE_SYNC, k, error, NO_ID, -1), &next);
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
                int status = !PyTuple_CheckExact(pair) || PyTuple_GET_SIZE(pair) != 2 ? GIVE_UP : 0;
                if (status == 0 && (status = read_id(PyTuple_GET_ITEM(pair, 0), &q->assignId[i])) == 0) {
                    status = read_partitions(PyTuple_GET_ITEM(pair, 1), &q->assignMask[i]);
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
    int status =
        emit(c, s, out, action(c, r->api == JOIN_GROUP ? A_RECEIVE_JOIN : A_RECEIVE_SYNC, k, error, NO_ID, -1), &next);
    Py_XDECREF(assignment);
    return status;
}

static int parked(const Grp *g, int k, const Cons *me) {
    for (int i = 0; i < g->n; i++) {
        const Member *m = &g->m[i];
        if (m->consumer == k && m->incarnation == me->incarnation && m->connected && (m->awaitingJoin || m->awaitingSync)) {
            return 1;
        }
    }
    return 0;
}

static int heartbeat_error(const Context *c, const Grp *g, const Cons *me, int k) {
    if (g->state == DEAD) {
        return NONE;
    }
    int error = member_error(g, me->id, instance_id(c, k));
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
        error = member_error(g, me->id, instance_id(c, k));
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
    return emit(c, s, out, action(c, A_OFFSET_COMMIT, k, error, me->id, me->generationId), &next);
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
    if (next.g.state != DEAD && find_member(&next.g, me->id) >= 0) {
        remove_member_and_update_group(c, &next, me->id);
    }
    return emit(c, s, out, action(c, A_LEAVE, k, 0, NO_ID, -1), &next);
}

static int crash_steps(const Context *c, const S *s, int k, PyObject *out, int stall) {
    S next = *s;
    stop(&next.c[k], s->c[k].incarnation);
    next.faults++;
    if (emit(c, s, out, action(c, A_CRASH, k, 0, NO_ID, -1), &next) < 0) {
        return -1;
    }
    if (stall && c->poll_stalls) {
        next = *s;
        next.c[k].stalled = 1;
        next.faults++;
        if (emit(c, s, out, action(c, A_STALL, k, 0, NO_ID, -1), &next) < 0) {
            return -1;
        }
    }
    return 0;
}

static int consumer_steps(const Context *c, const S *s, int k, PyObject *out) {
    const Cons *me = &s->c[k];
    int may_fail = s->faults < c->max_faults, status;
    S next;
    if (me->phase == STOPPED) {
        next = *s;
        stop(&next.c[k], me->incarnation + 1);
        next.c[k].phase = UNJOINED;
        return emit(c, s, out, action(c, A_START, k, 0, NO_ID, -1), &next);
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
        if (emit(c, s, out, action(c, A_SEND_JOIN, k, 0, NO_ID, -1), &next) < 0) {
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
        if (emit(c, s, out, action(c, A_REQUEST_TIMEOUT, k, 0, NO_ID, -1), &next) < 0) {
            return -1;
        }
    }
    if (me->phase == CONSUMING && idle) {
        if (can_join) {
            next = *s;
            send_join(c, &next.c[k]);
            if (emit(c, s, out, action(c, A_SEND_JOIN, k, 0, NO_ID, -1), &next) < 0) {
                return -1;
            }
        }
        int error = heartbeat_error(c, &s->g, me, k);
        if (error != NONE) {
            next = *s;
            on_error(c, &next.c[k], error, NULL);
            if (emit(c, s, out, action(c, A_HEARTBEAT, k, error, NO_ID, -1), &next) < 0) {
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

/* -- the module ------------------------------------------------------------------------------------- */

#define N_INTS 25

static int read_context(PyObject *ctx, Context *c) {
    if (!PyTuple_Check(ctx) || PyTuple_GET_SIZE(ctx) != 17) {
        PyErr_SetString(PyExc_TypeError, "successors(ctx, state): ctx is not GroupModel's context");
        return -1;
    }
    PyTypeObject **types[7] = {&c->state_type,    &c->group_type,   &c->member_type,  &c->stored_type,
                               &c->consumer_type, &c->request_type, &c->response_type};
    for (int i = 0; i < 7; i++) {
        PyObject *t = PyTuple_GET_ITEM(ctx, i);
        if (!PyType_Check(t) || !PyType_IsSubtype((PyTypeObject *)t, &PyTuple_Type)) {
            PyErr_SetString(PyExc_TypeError, "successors(ctx, state): the context's types must be tuple types");
            return -1;
        }
        *types[i] = (PyTypeObject *)t;
    }
    PyObject **names[6] = {&c->group_states, &c->phases, &c->errors, &c->apis, &c->delays, &c->action_names};
    Py_ssize_t sizes[6] = {N_GROUP_STATES, N_PHASES, N_ERRORS, N_APIS, N_DELAYS, N_ACTIONS};
    for (int i = 0; i < 6; i++) {
        *names[i] = PyTuple_GET_ITEM(ctx, 7 + i);
        if (!PyTuple_Check(*names[i]) || PyTuple_GET_SIZE(*names[i]) != sizes[i]) {
            PyErr_SetString(PyExc_TypeError, "successors(ctx, state): the context's names are not the model's");
            return -1;
        }
    }
    c->no_member = PyTuple_GET_ITEM(c->delays, DELAY_NONE);
    c->actions = PyTuple_GET_ITEM(ctx, 13);
    c->act = PyTuple_GET_ITEM(ctx, 14);
    c->run_assignor = PyTuple_GET_ITEM(ctx, 15);
    PyObject *ints = PyTuple_GET_ITEM(ctx, 16);
    if (!PyDict_Check(c->actions) || !PyTuple_Check(ints) || PyTuple_GET_SIZE(ints) != N_INTS) {
        PyErr_SetString(PyExc_TypeError, "successors(ctx, state): the context is not GroupModel's");
        return -1;
    }
    int *fields[N_INTS] = {&c->consumers,
                           &c->cooperative,
                           &c->sticky,
                           &c->claims_generation,
                           &c->claimless_generation_matters,
                           &c->static_membership,
                           &c->require_known_member_id,
                           &c->new_member_join_timeout,
                           &c->pending_members_block_join,
                           &c->join_group_v0,
                           &c->v0_rebalance_timeout,
                           &c->initial_rebalance_delay,
                           &c->delay_extensions,
                           &c->delayed_sync,
                           &c->rebalance_static_rejoin_in_completing,
                           &c->join_prepare_after_reset,
                           &c->sync_rebalance_resets_generation,
                           &c->fence_replaced_static_member,
                           &c->persist_static_replacement,
                           &c->timeouts_any,
                           &c->max_faults,
                           &c->coordinator_failover,
                           &c->slow_coordinator,
                           &c->consumer_pauses,
                           &c->poll_stalls};
    for (int i = 0; i < N_INTS; i++) {
        long v = PyLong_AsLong(PyTuple_GET_ITEM(ints, i));
        if (v == -1 && PyErr_Occurred()) {
            return -1;
        }
        *fields[i] = (int)v;
    }
    return 0;
}

static PyObject *empty_tuple;

/* The last context read, kept with a reference to its tuple (whose items it borrows): a search
 * asks with one model's context over and over. */
static PyObject *last_ctx;
static Context last_context;

static const Context *cached_context(PyObject *ctx) {
    if (ctx != last_ctx) {
        Context c;
        if (read_context(ctx, &c) < 0) {
            return NULL;
        }
        c.empty_tuple = empty_tuple;
        Py_INCREF(ctx);
        Py_XSETREF(last_ctx, ctx);
        last_context = c;
    }
    return &last_context;
}

static PyObject *successors(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "successors(ctx, state) takes two arguments");
        return NULL;
    }
    const Context *context = cached_context(args[0]);
    if (context == NULL) {
        return NULL;
    }
    Context c = *context;
    S s;
    int status = read_state(&c, args[1], &s);
    if (status < 0) {
        return NULL;
    }
    if (status > 0 || s.nc > MAX_PROCESSES || c.consumers >= MAX_PROCESSES + 1) {
        Py_RETURN_NONE;
    }
    PyObject *out = PyList_New(0);
    if (out == NULL) {
        return NULL;
    }
    for (int k = 0; k < s.nc && status == 0; k++) {
        status = consumer_steps(&c, &s, k, out);
    }
    if (status == 0) {
        S next = s;
        if (s.g.state == DEAD) {
            load(&next);
            status = emit(&c, &s, out, action(&c, A_LOAD, 0, 0, NO_ID, -1), &next);
        } else {
            status = coordinator_timers(&c, &s, out);
            if (status == 0 && c.coordinator_failover && s.faults < c.max_faults) {
                unload(&next);
                status = emit(&c, &s, out, action(&c, A_UNLOAD, 0, 0, NO_ID, -1), &next);
            }
        }
    }
    if (status != 0) {
        Py_DECREF(out);
        if (status < 0) {
            return NULL;
        }
        Py_RETURN_NONE;
    }
    return out;
}

/* The generation at ``index`` of a tuple, into *high when >= 0 and larger; GIVE_UP when it is no int. */
static int see_generation(PyObject *t, Py_ssize_t index, long *high) {
    if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) <= index) {
        return GIVE_UP;
    }
    long g;
    int status = read_long(PyTuple_GET_ITEM(t, index), &g);
    if (status == 0 && g > *high) {
        *high = g;
    }
    return status;
}

/* The metadata generations of a tuple of members (index 4 of each) or of subscriptions (index 2). */
static int see_metadata_generations(PyObject *members, Py_ssize_t index, long *high) {
    if (!PyTuple_Check(members)) {
        return GIVE_UP;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(members); i++) {
        PyObject *m = PyTuple_GET_ITEM(members, i);
        if (!PyTuple_Check(m) || PyTuple_GET_SIZE(m) <= index) {
            return GIVE_UP;
        }
        int status = see_generation(PyTuple_GET_ITEM(m, index), 1, high);
        if (status != 0) {
            return status;
        }
    }
    return 0;
}

/* _max_generation(s), read straight off the tuples: within_bounds asks it of every state. */
static int highest_generation_of(const Context *c, PyObject *s, long *high) {
    if (!is_named(s, c->state_type, 3)) {
        return GIVE_UP;
    }
    PyObject *group = PyTuple_GET_ITEM(s, 0), *consumers = PyTuple_GET_ITEM(s, 1);
    int status;
    if (!is_named(group, c->group_type, 10) || !PyTuple_Check(consumers)) {
        return GIVE_UP;
    }
    if ((status = see_generation(group, 1, high)) != 0 ||
        (status = see_metadata_generations(PyTuple_GET_ITEM(group, 3), 4, high)) != 0) {
        return status;
    }
    PyObject *stored = PyTuple_GET_ITEM(group, 9);
    if (stored != Py_None) {
        if (!is_named(stored, c->stored_type, 3)) {
            return GIVE_UP;
        }
        if ((status = see_generation(stored, 0, high)) != 0 ||
            (status = see_metadata_generations(PyTuple_GET_ITEM(stored, 2), 4, high)) != 0) {
            return status;
        }
    }
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(consumers); k++) {
        PyObject *me = PyTuple_GET_ITEM(consumers, k);
        if (!is_named(me, c->consumer_type, 11)) {
            return GIVE_UP;
        }
        if ((status = see_generation(me, 2, high)) != 0 || (status = see_generation(me, 10, high)) != 0) {
            return status;
        }
        PyObject *request = PyTuple_GET_ITEM(me, 5), *response = PyTuple_GET_ITEM(me, 6);
        if (request != Py_None) {
            if (!is_named(request, c->request_type, 5)) {
                return GIVE_UP;
            }
            if ((status = see_generation(request, 2, high)) != 0 ||
                (status = see_generation(PyTuple_GET_ITEM(request, 3), 1, high)) != 0) {
                return status;
            }
        }
        if (response != Py_None) {
            if (!is_named(response, c->response_type, 7)) {
                return GIVE_UP;
            }
            if ((status = see_generation(response, 3, high)) != 0 ||
                (status = see_metadata_generations(PyTuple_GET_ITEM(response, 5), 2, high)) != 0) {
                return status;
            }
        }
    }
    return 0;
}

static PyObject *max_generation(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "max_generation(ctx, state) takes two arguments");
        return NULL;
    }
    const Context *c = cached_context(args[0]);
    if (c == NULL) {
        return NULL;
    }
    long high = -1;
    int status = highest_generation_of(c, args[1], &high);
    if (status < 0) {
        return NULL;
    }
    if (status > 0 || high < 0) {
        Py_RETURN_NONE;
    }
    return PyLong_FromLong(high);
}

static PyMethodDef methods[] = {
    {"successors", (PyCFunction)(void (*)(void))successors, METH_FASTCALL,
     "successors(ctx, state) -> list of (action, state), or None for a state left to the Python."},
    {"max_generation", (PyCFunction)(void (*)(void))max_generation, METH_FASTCALL,
     "max_generation(ctx, state) -> the highest generation in the state, or None for a state left to the Python."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_group", "The group model's successor function, in C.", -1, methods, NULL, NULL, NULL,
    NULL,
};

PyMODINIT_FUNC PyInit__group(void) {
    rank_ids();
    if (empty_tuple == NULL && (empty_tuple = PyTuple_New(0)) == NULL) {
        return NULL;
    }
    return PyModule_Create(&module);
}
