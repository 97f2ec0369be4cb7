/* The successor function of models/kraft_replication.py, in C: the same steps, in the same order,
 * built from the same NamedTuple types and action labels, for every combination of the model's flags.
 *
 * successors(ctx, state) returns the list KraftReplicationModel._successors(state) returns, or None
 * when the state is outside the sizes this code handles (the caller then runs the Python). ctx is the
 * tuple KraftReplicationModel._fast_context() builds: the state types, the error and fetch-state
 * strings, the action tables, the model's controller-change memo, the Python methods of the rare
 * controller steps (called from here, appending to the same list) and the configuration as small ints.
 * The Python stays the definition; tests compare the two on every reachable state.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#define MAX_BROKERS 8
#define MAX_LOG 16
#define NO_LEADER (-1)
#define UNDEFINED (-1)
#define AWAITING_METADATA (-1)

/* The state's fields, in the order of the NamedTuples. */
enum { S_CONTROLLER, S_REPLICAS, S_FETCHES, S_NEXT_RECORD_ID, S_CRASHES, S_FENCES, S_SHUTDOWNS, S_COMMITTED,
       S_CONSUMED, S_ACKED, S_FAILOVERS, S_REASSIGNMENTS, S_SIZE };
enum { R_RUNNING, R_BROKER_EPOCH, R_CLEAN_SHUTDOWN_EPOCH, R_LOG, R_HW, R_LEADER, R_LEADER_EPOCH, R_PARTITION_EPOCH,
       R_ISR, R_PENDING, R_FOLLOWER_STATE, R_FETCH_STATE, R_HOSTED, R_ASSIGNMENT, R_SIZE };
enum { C_BROKER_EPOCHS, C_FENCED, C_LEADER, C_LEADER_EPOCH, C_PARTITION_EPOCH, C_ISR, C_ELR, C_NEXT_BROKER_EPOCH,
       C_REPLICAS, C_ADDING, C_REMOVING, C_SIZE };

enum { ERR_NONE, ERR_NOT_LEADER_OR_FOLLOWER, ERR_FENCED_LEADER_EPOCH, ERR_UNKNOWN_LEADER_EPOCH, ERR_DIVERGING_EPOCH,
       ERR_OFFSET_OUT_OF_RANGE, STR_FETCHING, STR_TRUNCATING, N_STRINGS };
enum { ACKS_0, ACKS_1, ACKS_ALL };
enum { CRASH_POWER, CRASH_PROCESS, CRASH_DISK };
enum { TRUNC_HW, TRUNC_OFFSETS_FOR_LEADER_EPOCH, TRUNC_DIVERGING_EPOCH };
enum { MSG_NONE, MSG_FETCH_REQUEST, MSG_FETCH_RESPONSE, MSG_OFLE_REQUEST, MSG_OFLE_RESPONSE };

/* The Python methods called for the rare controller steps. */
enum { CB_HANDLE_ALTER_PARTITION, CB_CONTROLLED_SHUTDOWN, CB_RESTART, CB_UNFENCE, CB_FENCE, CB_CONTROLLER_FAILOVER,
       CB_REASSIGNMENTS, CB_HANDLE_OFLE, CB_HANDLE_OFLE_RESPONSE, CB_APPLY_METADATA, N_CALLBACKS };
enum { A_PRODUCE, A_SEND_FETCH, A_HANDLE_FETCH, A_HANDLE_FETCH_RESPONSE, A_SEND_OFLE, A_SHRINK_ISR, A_EXPAND_ISR,
       A_APPLY_METADATA, A_CRASH, A_UNFENCE, A_FENCE, A_HANDLE_ALTER_PARTITION, N_TABLES };
enum { I_BROKERS, I_MIN_ISR, I_ACKS, I_MAX_RECORDS, I_MAX_CRASHES, I_MAX_FENCES, I_MAX_SHUTDOWNS, I_CRASH,
       I_TRUNCATION, I_FETCH_FENCING, I_MAXIMAL_ISR, I_ISR_EXPAND_LESO, I_ISR_BROKER_EPOCH, I_HW_MIN_ISR,
       I_DIVERGING_FETCH_NOT_COUNTED, I_MAX_CONTROLLER_FAILOVERS, I_MAX_REASSIGNMENTS, I_AWAITS_METADATA, N_INTS };
#define N_TYPES 8
#define CTX_SIZE 16

/* The context, unpacked. */
typedef struct {
    PyTypeObject *state_type, *replica_type, *record_type, *alter_partition_type, *fetch_request_type,
        *fetch_response_type, *ofle_request_type, *ofle_response_type;
    PyObject *strings[N_STRINGS];
    PyObject *unknown_followers, *changes, *dense, *unfence_key, *fence_key, *commit_key;
    PyObject *callbacks[N_CALLBACKS];
    PyObject *tables[N_TABLES];
    long ints[N_INTS];
} Context;

/* A replica, read out of the state once. */
typedef struct {
    PyObject *obj, *log, *isr_obj;
    int running, hosted, truncating, has_pending, nassignment;
    Py_ssize_t len;
    long id[MAX_LOG], epoch[MAX_LOG];
    long brokerEpoch, hw, leader, leaderEpoch, partitionEpoch, pending_sentTo;
    unsigned isr, pending_isr, assignment_mask;
    long fs_leo[MAX_BROKERS], fs_epoch[MAX_BROKERS];
    int assignment[MAX_BROKERS];
} Rep;

typedef struct {
    PyObject *obj;
    int kind;
    long leader;
} Msg;

typedef struct {
    PyObject *state, *controller, *replicas, *fetches;
    int n;
    Rep r[MAX_BROKERS];
    Msg m[MAX_BROKERS];
    long c_leader, c_leaderEpoch, c_partitionEpoch, c_brokerEpochs[MAX_BROKERS];
    unsigned c_fenced, c_isr, c_replicas;
    long nextRecordId, crashes, fences, shutdowns, failovers, reassignments;
} View;

static PyObject *mask_sets[1 << MAX_BROKERS]; /* the frozenset of each broker mask, made once */

static PyObject *mask_set(unsigned mask) {
    PyObject *set = mask_sets[mask];
    if (set == NULL) {
        set = PyFrozenSet_New(NULL);
        if (set == NULL) {
            return NULL;
        }
        for (int r = 0; r < MAX_BROKERS; r++) {
            if (mask & (1u << r)) {
                PyObject *id = PyLong_FromLong(r);
                if (id == NULL || PySet_Add(set, id) < 0) {
                    Py_XDECREF(id);
                    Py_DECREF(set);
                    return NULL;
                }
                Py_DECREF(id);
            }
        }
        mask_sets[mask] = set;
    }
    return Py_NewRef(set);
}

static int popcount(unsigned mask) {
    int n = 0;
    for (; mask; mask &= mask - 1) {
        n++;
    }
    return n;
}

/* -- reading the state: -1 and an exception, 0, or 1 for a value this code does not handle ------- */

static int read_long(PyObject *value, long *out) {
    if (!PyLong_CheckExact(value)) {
        return 1;
    }
    long v = PyLong_AsLong(value);
    if (v == -1 && PyErr_Occurred()) {
        return -1;
    }
    *out = v;
    return 0;
}

static int read_bool(PyObject *value, int *out) {
    if (value == Py_True || value == Py_False) {
        *out = value == Py_True;
        return 0;
    }
    return 1;
}

/* The elements of a frozenset of at most ``max`` elements, borrowed (the set holds them); -1 and an
 * exception, or their number (more than ``max``: give up). */
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

/* A frozenset of broker ids as a mask. */
static int read_mask(PyObject *set, int n, unsigned *out) {
    if (!PyFrozenSet_CheckExact(set)) {
        return 1;
    }
    PyObject *items[MAX_BROKERS];
    Py_ssize_t size = set_items(set, items, MAX_BROKERS);
    if (size < 0 || size > MAX_BROKERS) {
        return size < 0 ? -1 : 1;
    }
    unsigned mask = 0;
    for (Py_ssize_t i = 0; i < size; i++) {
        long r;
        int status = read_long(items[i], &r);
        if (status != 0) {
            return status;
        }
        if (r < 0 || r >= n) {
            return 1;
        }
        mask |= 1u << r;
    }
    *out = mask;
    return 0;
}

/* Whether ``value`` is the string ``known`` (the same object, or an equal one after a pickle). */
static int is_string(PyObject *value, PyObject *known) {
    return value == known || (PyUnicode_CheckExact(value) && PyUnicode_Compare(value, known) == 0);
}

/* A tuple of ``size`` items of a given type (exact, or any tuple when type is NULL). */
static int is_tuple(PyObject *t, PyTypeObject *type, Py_ssize_t size) {
    if (type != NULL ? Py_TYPE(t) != type : !PyTuple_Check(t)) {
        return 0;
    }
    return PyTuple_GET_SIZE(t) == size;
}

static int read_log(PyObject *log, const Context *c, Py_ssize_t *len, long *id, long *epoch) {
    if (!PyTuple_CheckExact(log) || PyTuple_GET_SIZE(log) > MAX_LOG) {
        return 1;
    }
    *len = PyTuple_GET_SIZE(log);
    int status;
    for (Py_ssize_t i = 0; i < *len; i++) {
        PyObject *record = PyTuple_GET_ITEM(log, i);
        if (!is_tuple(record, c->record_type, 2)) {
            return 1;
        }
        if ((status = read_long(PyTuple_GET_ITEM(record, 0), &id[i])) != 0 ||
            (status = read_long(PyTuple_GET_ITEM(record, 1), &epoch[i])) != 0) {
            return status;
        }
    }
    return 0;
}

static int read_replica(const Context *c, PyObject *obj, int n, Rep *r) {
    if (!is_tuple(obj, c->replica_type, R_SIZE)) {
        return 1;
    }
    r->obj = obj;
    int status;
    if ((status = read_bool(PyTuple_GET_ITEM(obj, R_RUNNING), &r->running)) != 0 ||
        (status = read_bool(PyTuple_GET_ITEM(obj, R_HOSTED), &r->hosted)) != 0 ||
        (status = read_long(PyTuple_GET_ITEM(obj, R_BROKER_EPOCH), &r->brokerEpoch)) != 0 ||
        (status = read_long(PyTuple_GET_ITEM(obj, R_HW), &r->hw)) != 0 ||
        (status = read_long(PyTuple_GET_ITEM(obj, R_LEADER), &r->leader)) != 0 ||
        (status = read_long(PyTuple_GET_ITEM(obj, R_LEADER_EPOCH), &r->leaderEpoch)) != 0 ||
        (status = read_long(PyTuple_GET_ITEM(obj, R_PARTITION_EPOCH), &r->partitionEpoch)) != 0) {
        return status;
    }
    if (r->leader < NO_LEADER || r->leader >= n) {
        return 1;
    }
    r->log = PyTuple_GET_ITEM(obj, R_LOG);
    if ((status = read_log(r->log, c, &r->len, r->id, r->epoch)) != 0) {
        return status;
    }
    r->isr_obj = PyTuple_GET_ITEM(obj, R_ISR);
    if ((status = read_mask(r->isr_obj, n, &r->isr)) != 0) {
        return status;
    }
    PyObject *pending = PyTuple_GET_ITEM(obj, R_PENDING);
    r->has_pending = pending != Py_None;
    if (r->has_pending) {
        if (!is_tuple(pending, c->alter_partition_type, 3)) {
            return 1;
        }
        if ((status = read_mask(PyTuple_GET_ITEM(pending, 0), n, &r->pending_isr)) != 0 ||
            (status = read_long(PyTuple_GET_ITEM(pending, 2), &r->pending_sentTo)) != 0) {
            return status;
        }
    }
    PyObject *fs = PyTuple_GET_ITEM(obj, R_FOLLOWER_STATE);
    if (!PyTuple_Check(fs) || PyTuple_GET_SIZE(fs) != n) {
        return 1;
    }
    for (int i = 0; i < n; i++) {
        PyObject *pair = PyTuple_GET_ITEM(fs, i);
        if (!is_tuple(pair, NULL, 2)) {
            return 1;
        }
        if ((status = read_long(PyTuple_GET_ITEM(pair, 0), &r->fs_leo[i])) != 0 ||
            (status = read_long(PyTuple_GET_ITEM(pair, 1), &r->fs_epoch[i])) != 0) {
            return status;
        }
    }
    PyObject *fetch_state = PyTuple_GET_ITEM(obj, R_FETCH_STATE);
    if (is_string(fetch_state, c->strings[STR_TRUNCATING])) {
        r->truncating = 1;
    } else if (is_string(fetch_state, c->strings[STR_FETCHING])) {
        r->truncating = 0;
    } else {
        return 1;
    }
    PyObject *assignment = PyTuple_GET_ITEM(obj, R_ASSIGNMENT);
    if (!PyTuple_Check(assignment) || PyTuple_GET_SIZE(assignment) > n) {
        return 1;
    }
    r->nassignment = (int)PyTuple_GET_SIZE(assignment);
    r->assignment_mask = 0;
    for (int i = 0; i < r->nassignment; i++) {
        long b;
        if ((status = read_long(PyTuple_GET_ITEM(assignment, i), &b)) != 0) {
            return status;
        }
        if (b < 0 || b >= n) {
            return 1;
        }
        r->assignment[i] = (int)b;
        r->assignment_mask |= 1u << b;
    }
    return 0;
}

static int read_controller(const Context *c, PyObject *obj, View *v) {
    (void)c;
    if (!PyTuple_Check(obj) || PyTuple_GET_SIZE(obj) != C_SIZE) {
        return 1;
    }
    int n = v->n, status;
    if ((status = read_long(PyTuple_GET_ITEM(obj, C_LEADER), &v->c_leader)) != 0 ||
        (status = read_long(PyTuple_GET_ITEM(obj, C_LEADER_EPOCH), &v->c_leaderEpoch)) != 0 ||
        (status = read_long(PyTuple_GET_ITEM(obj, C_PARTITION_EPOCH), &v->c_partitionEpoch)) != 0 ||
        (status = read_mask(PyTuple_GET_ITEM(obj, C_FENCED), n, &v->c_fenced)) != 0 ||
        (status = read_mask(PyTuple_GET_ITEM(obj, C_ISR), n, &v->c_isr)) != 0) {
        return status;
    }
    if (v->c_leader < NO_LEADER || v->c_leader >= n) {
        return 1;
    }
    PyObject *epochs = PyTuple_GET_ITEM(obj, C_BROKER_EPOCHS);
    if (!PyTuple_Check(epochs) || PyTuple_GET_SIZE(epochs) != n) {
        return 1;
    }
    for (int b = 0; b < n; b++) {
        if ((status = read_long(PyTuple_GET_ITEM(epochs, b), &v->c_brokerEpochs[b])) != 0) {
            return status;
        }
    }
    PyObject *replicas = PyTuple_GET_ITEM(obj, C_REPLICAS);
    if (!PyTuple_Check(replicas)) {
        return 1;
    }
    v->c_replicas = 0;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(replicas); i++) {
        long b;
        if ((status = read_long(PyTuple_GET_ITEM(replicas, i), &b)) != 0) {
            return status;
        }
        if (b < 0 || b >= n) {
            return 1;
        }
        v->c_replicas |= 1u << b;
    }
    return 0;
}

static int read_view(const Context *c, PyObject *s, View *v) {
    if (!is_tuple(s, c->state_type, S_SIZE)) {
        return 1;
    }
    v->state = s;
    v->controller = PyTuple_GET_ITEM(s, S_CONTROLLER);
    v->replicas = PyTuple_GET_ITEM(s, S_REPLICAS);
    v->fetches = PyTuple_GET_ITEM(s, S_FETCHES);
    if (!PyTuple_Check(v->replicas) || !PyTuple_Check(v->fetches)) {
        return 1;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(v->replicas);
    if (n != c->ints[I_BROKERS] || n > MAX_BROKERS || PyTuple_GET_SIZE(v->fetches) != n) {
        return 1;
    }
    v->n = (int)n;
    int status;
    long *counters[6] = {&v->nextRecordId, &v->crashes, &v->fences, &v->shutdowns, &v->failovers,
                         &v->reassignments};
    int fields[6] = {S_NEXT_RECORD_ID, S_CRASHES, S_FENCES, S_SHUTDOWNS, S_FAILOVERS, S_REASSIGNMENTS};
    for (int i = 0; i < 6; i++) {
        if ((status = read_long(PyTuple_GET_ITEM(s, fields[i]), counters[i])) != 0) {
            return status;
        }
    }
    if ((status = read_controller(c, v->controller, v)) != 0) {
        return status;
    }
    for (int b = 0; b < n; b++) {
        if ((status = read_replica(c, PyTuple_GET_ITEM(v->replicas, b), v->n, &v->r[b])) != 0) {
            return status;
        }
        Msg *m = &v->m[b];
        m->obj = PyTuple_GET_ITEM(v->fetches, b);
        if (m->obj == Py_None) {
            m->kind = MSG_NONE;
            continue;
        }
        PyTypeObject *type = Py_TYPE(m->obj);
        m->kind = type == c->fetch_request_type    ? MSG_FETCH_REQUEST
                  : type == c->fetch_response_type ? MSG_FETCH_RESPONSE
                  : type == c->ofle_request_type   ? MSG_OFLE_REQUEST
                  : type == c->ofle_response_type  ? MSG_OFLE_RESPONSE
                                                   : -1;
        if (m->kind < 0 || PyTuple_GET_SIZE(m->obj) < 1) {
            return 1;
        }
        if ((status = read_long(PyTuple_GET_ITEM(m->obj, 0), &m->leader)) != 0) {
            return status;
        }
        if (m->leader < 0 || m->leader >= n) {
            return 1;
        }
    }
    return 0;
}

/* Whether every action a state can take is in the tables (their sizes come from the config). */
static int within_tables(const Context *c, const View *v) {
    long max_records = c->ints[I_MAX_RECORDS];
    if (v->nextRecordId < 0 || v->crashes < 0 || v->fences < 0 || v->shutdowns < 0) {
        return 0;
    }
    for (int b = 0; b < v->n; b++) {
        if (v->r[b].len > max_records) {
            return 0; /* a crash may keep any prefix: the crash table goes up to max_records */
        }
    }
    return 1;
}

/* -- building values (every maker steals the references it is given, and checks them) ------------ */

static PyObject *new_named(PyTypeObject *type, Py_ssize_t size, PyObject **items) {
    for (Py_ssize_t i = 0; i < size; i++) {
        if (items[i] == NULL) {
            for (Py_ssize_t j = 0; j < size; j++) {
                Py_XDECREF(items[j]);
            }
            return NULL;
        }
    }
    PyObject *t = type->tp_alloc(type, size);
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

static PyObject *pair(PyObject *a, PyObject *b) {
    PyObject *items[2] = {a, b};
    return new_named(&PyTuple_Type, 2, items);
}

/* tuple ``t`` with item ``index`` replaced by ``value`` (stolen): tuples.put. */
static PyObject *put(PyObject *t, Py_ssize_t index, PyObject *value) {
    if (value == NULL) {
        return NULL;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(t);
    PyObject *out = PyTuple_New(n);
    if (out == NULL) {
        Py_DECREF(value);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyTuple_SET_ITEM(out, i, i == index ? value : Py_NewRef(PyTuple_GET_ITEM(t, i)));
    }
    return out;
}

/* ``log[:k]`` as Python slices it. */
static PyObject *head(PyObject *log, long k) {
    Py_ssize_t len = PyTuple_GET_SIZE(log);
    if (k < 0) {
        k += len;
        if (k < 0) {
            k = 0;
        }
    }
    return PyTuple_GetSlice(log, 0, k);
}

/* ``log[k:]`` as Python slices it. */
static PyObject *tail(PyObject *log, long k) {
    Py_ssize_t len = PyTuple_GET_SIZE(log);
    if (k < 0) {
        k += len;
        if (k < 0) {
            k = 0;
        }
    }
    return PyTuple_GetSlice(log, k, len);
}

/* Copies of a tuple's items (new references), to replace some and build a new tuple of the same type. */
static void load(PyObject *t, PyObject **items, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++) {
        items[i] = Py_NewRef(PyTuple_GET_ITEM(t, i));
    }
}

static void set(PyObject **items, int i, PyObject *value) { Py_XSETREF(items[i], value); }

static PyObject *num(long v) { return PyLong_FromLong(v); }

static PyObject *act1(const Context *c, int table, long i) { return PyList_GET_ITEM(c->tables[table], i); }
static PyObject *act2(const Context *c, int table, long i, long j) {
    return PyList_GET_ITEM(PyList_GET_ITEM(c->tables[table], i), j);
}

/* Appends (action, next) to out, stealing next; -1 on error. */
static int emit(PyObject *out, PyObject *action, PyObject *next) {
    if (next == NULL) {
        return -1;
    }
    PyObject *step = pair(Py_NewRef(action), next);
    if (step == NULL) {
        return -1;
    }
    int status = PyList_Append(out, step);
    Py_DECREF(step);
    return status;
}

/* with_fetches(s, put(s.fetches, f, message)), message stolen. */
static PyObject *with_fetch(const Context *c, const View *v, int f, PyObject *message) {
    PyObject *items[S_SIZE];
    load(v->state, items, S_SIZE);
    set(items, S_FETCHES, put(v->fetches, f, message));
    return new_named(c->state_type, S_SIZE, items);
}

/* -- the model's helpers -------------------------------------------------------------------------- */

/* The size of hw_quorum: the maximal ISR (committed ∪ proposed), or the proposed one before KIP-497. */
static unsigned hw_quorum(const Context *c, unsigned isr, int has_pending, unsigned pending_isr) {
    if (!has_pending) {
        return isr;
    }
    return c->ints[I_MAXIMAL_ISR] ? isr | pending_isr : pending_isr;
}

/* Partition.maybeIncrementLeaderHW: the new HW of a leader with this log end, ISR and follower
 * states (its old one when it does not move). */
static long incremented_hw(const Context *c, int b, long hw, Py_ssize_t leo, unsigned isr, int has_pending,
                           unsigned pending_isr, const long *fs_leo) {
    if (c->ints[I_HW_MIN_ISR] && popcount(isr) < c->ints[I_MIN_ISR]) {
        return hw;
    }
    long candidate = (long)leo;
    unsigned quorum = hw_quorum(c, isr, has_pending, pending_isr);
    for (int r = 0; r < MAX_BROKERS; r++) {
        if ((quorum & (1u << r)) && r != b && fs_leo[r] < candidate) {
            candidate = fs_leo[r];
        }
    }
    return candidate > hw ? candidate : hw;
}

/* LeaderEpochFileCache.endOffsetFor over a log. */
static void end_offset_for_epoch(Py_ssize_t len, const long *epochs, long requested, long latest, long *epoch,
                                 long *end) {
    if (requested == UNDEFINED || requested > latest) {
        *epoch = *end = UNDEFINED;
        return;
    }
    if (requested == latest) {
        *epoch = requested;
        *end = (long)len;
        return;
    }
    long floor = UNDEFINED;
    for (Py_ssize_t offset = 0; offset < len; offset++) {
        if (epochs[offset] > requested) {
            *epoch = floor != UNDEFINED ? floor : requested;
            *end = (long)offset;
            return;
        }
        floor = epochs[offset];
    }
    *epoch = floor != UNDEFINED ? floor : requested;
    *end = (long)len;
}

static long last_epoch(const Rep *r) { return r->len ? r->epoch[r->len - 1] : UNDEFINED; }

/* truncation_offset: where a follower truncates given the leader's (epoch, endOffset). */
static long truncation_offset(const Rep *f, long epoch, long end, int *done) {
    long len = (long)f->len;
    *done = 1;
    if (end == UNDEFINED) {
        return f->hw < len ? f->hw : len;
    }
    long own_epoch, own_end;
    end_offset_for_epoch(f->len, f->epoch, epoch, last_epoch(f), &own_epoch, &own_end);
    if (own_epoch == UNDEFINED) {
        return end < len ? end : len;
    }
    if (own_epoch != epoch) {
        *done = 0;
        return own_end < len ? own_end : len;
    }
    return end < own_end ? end : own_end;
}

/* The ghosts of _update, for broker b's new replica (already in items): a leader's HW advance extends
 * what consumers read and what is committed, and completes acks=all produce requests. -1 on error. */
static int ghosts(const Context *c, const View *v, int b, PyObject *replica, PyObject **items) {
    const Rep *old = &v->r[b];
    long hw, leader, leaderEpoch;
    int running, status;
    if ((status = read_long(PyTuple_GET_ITEM(replica, R_LEADER), &leader)) != 0 ||
        (status = read_long(PyTuple_GET_ITEM(replica, R_HW), &hw)) != 0 ||
        (status = read_bool(PyTuple_GET_ITEM(replica, R_RUNNING), &running)) != 0 ||
        (status = read_long(PyTuple_GET_ITEM(replica, R_LEADER_EPOCH), &leaderEpoch)) != 0) {
        if (status > 0) {
            PyErr_SetString(PyExc_SystemError, "kraft-replication successors: a replica built here is unreadable");
        }
        return -1;
    }
    if (leader != b || hw <= old->hw || !running) {
        return 0;
    }
    PyObject *log = PyTuple_GET_ITEM(replica, R_LOG);
    if (hw > PyTuple_GET_SIZE(items[S_CONSUMED])) {
        set(items, S_CONSUMED, head(log, hw));
        if (items[S_CONSUMED] == NULL) {
            return -1;
        }
    }
    PyObject *controller = items[S_CONTROLLER];
    long c_leader, c_epoch;
    if ((status = read_long(PyTuple_GET_ITEM(controller, C_LEADER), &c_leader)) != 0 ||
        (status = read_long(PyTuple_GET_ITEM(controller, C_LEADER_EPOCH), &c_epoch)) != 0) {
        if (status > 0) {
            PyErr_SetString(PyExc_SystemError, "kraft-replication successors: a controller built here is unreadable");
        }
        return -1;
    }
    if (c_leader == b && c_epoch == leaderEpoch && hw > PyTuple_GET_SIZE(items[S_COMMITTED])) {
        set(items, S_COMMITTED, head(log, hw));
        if (items[S_COMMITTED] == NULL) {
            return -1;
        }
    }
    if (c->ints[I_ACKS] != ACKS_ALL || old->leader != b || old->leaderEpoch != leaderEpoch) {
        return 0;
    }
    unsigned isr, pending_isr = 0;
    PyObject *pending = PyTuple_GET_ITEM(replica, R_PENDING);
    if ((status = read_mask(PyTuple_GET_ITEM(replica, R_ISR), v->n, &isr)) != 0 ||
        (pending != Py_None && (status = read_mask(PyTuple_GET_ITEM(pending, 0), v->n, &pending_isr)) != 0)) {
        if (status > 0) {
            PyErr_SetString(PyExc_SystemError, "kraft-replication successors: an ISR built here is unreadable");
        }
        return -1;
    }
    if (popcount(hw_quorum(c, isr, pending != Py_None, pending_isr)) < c->ints[I_MIN_ISR]) {
        return 0;
    }
    PyObject *acked = NULL;
    Py_ssize_t len = PyTuple_GET_SIZE(log);
    for (long offset = old->hw; offset < hw && offset < len; offset++) {
        PyObject *record = PyTuple_GET_ITEM(log, offset);
        long epoch;
        if (read_long(PyTuple_GET_ITEM(record, 1), &epoch) != 0) {
            Py_XDECREF(acked);
            if (!PyErr_Occurred()) {
                PyErr_SetString(PyExc_SystemError, "kraft-replication successors: a record is unreadable");
            }
            return -1;
        }
        if (epoch != leaderEpoch) {
            continue;
        }
        if (acked == NULL && (acked = PyFrozenSet_New(items[S_ACKED])) == NULL) {
            return -1;
        }
        if (PySet_Add(acked, PyTuple_GET_ITEM(record, 0)) < 0) {
            Py_DECREF(acked);
            return -1;
        }
    }
    if (acked != NULL) {
        set(items, S_ACKED, acked);
    }
    return 0;
}

/* _update: the state with broker b's replica (stolen) and the ghosts; ``items`` holds the state's
 * other fields (fetches, counters), new references, consumed here. */
static PyObject *update(const Context *c, const View *v, int b, PyObject *replica, PyObject **items) {
    if (replica == NULL) {
        for (int i = 0; i < S_SIZE; i++) {
            Py_XDECREF(items[i]);
        }
        return NULL;
    }
    set(items, S_REPLICAS, put(v->replicas, b, Py_NewRef(replica)));
    int status = items[S_REPLICAS] == NULL ? -1 : ghosts(c, v, b, replica, items);
    Py_DECREF(replica);
    if (status < 0) {
        for (int i = 0; i < S_SIZE; i++) {
            Py_XDECREF(items[i]);
        }
        return NULL;
    }
    return new_named(c->state_type, S_SIZE, items);
}

/* _update with only the replica changed. */
static PyObject *update_replica(const Context *c, const View *v, int b, PyObject *replica) {
    PyObject *items[S_SIZE];
    load(v->state, items, S_SIZE);
    return update(c, v, b, replica, items);
}

/* A replica with some fields replaced (values stolen). */
static PyObject *replica_with(const Context *c, const Rep *r, int k, const int *fields, PyObject **values) {
    PyObject *items[R_SIZE];
    load(r->obj, items, R_SIZE);
    for (int i = 0; i < k; i++) {
        set(items, fields[i], values[i]);
    }
    return new_named(c->replica_type, R_SIZE, items);
}

static long rank_of(const long *present, int count, long e) {
    long rank = 0;
    for (int j = 0; j < count; j++) {
        rank += present[j] < e;
    }
    return rank;
}

/* dense_partition_epochs: partition epochs as ranks 0..k-1 of the values present. t is stolen. */
static PyObject *dense(const Context *c, const View *v, PyObject *t) {
    if (t == NULL) {
        return NULL;
    }
    PyObject *controller, *replicas;
    long epoch, epochs[MAX_BROKERS], present[MAX_BROKERS + 1];
    if (!is_tuple(t, c->state_type, S_SIZE)) {
        goto python;
    }
    controller = PyTuple_GET_ITEM(t, S_CONTROLLER);
    replicas = PyTuple_GET_ITEM(t, S_REPLICAS);
    if (!PyTuple_Check(controller) || PyTuple_GET_SIZE(controller) != C_SIZE || !PyTuple_Check(replicas) ||
        read_long(PyTuple_GET_ITEM(controller, C_PARTITION_EPOCH), &epoch) != 0) {
        goto python;
    }
    if (replicas == v->replicas && epoch == v->c_partitionEpoch) {
        return t;
    }
    int count = 0;
    Py_ssize_t n = PyTuple_GET_SIZE(replicas);
    if (n > MAX_BROKERS) {
        goto python;
    }
    for (Py_ssize_t i = -1; i < n; i++) {
        long e = epoch;
        if (i >= 0) {
            PyObject *r = PyTuple_GET_ITEM(replicas, i);
            if (!is_tuple(r, c->replica_type, R_SIZE) || read_long(PyTuple_GET_ITEM(r, R_PARTITION_EPOCH), &e) != 0) {
                goto python;
            }
            epochs[i] = e;
        }
        if (e == UNDEFINED) {
            continue;
        }
        int seen = 0;
        for (int j = 0; j < count; j++) {
            seen |= present[j] == e;
        }
        if (!seen) {
            present[count++] = e;
        }
    }
    if (epoch == count - 1) {
        return t;
    }
    {
        /* rank[e]: how many present values are below e */
#define RANK(e) ((e) == UNDEFINED ? UNDEFINED : rank_of(present, count, (e)))
        PyObject *ranked = PyTuple_New(n);
        if (ranked == NULL) {
            Py_DECREF(t);
            return NULL;
        }
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *r = PyTuple_GET_ITEM(replicas, i);
            long rank = RANK(epochs[i]);
            if (rank == epochs[i]) {
                PyTuple_SET_ITEM(ranked, i, Py_NewRef(r));
                continue;
            }
            PyObject *items[R_SIZE];
            load(r, items, R_SIZE);
            set(items, R_PARTITION_EPOCH, num(rank));
            PyObject *changed = new_named(c->replica_type, R_SIZE, items);
            if (changed == NULL) {
                Py_DECREF(ranked);
                Py_DECREF(t);
                return NULL;
            }
            PyTuple_SET_ITEM(ranked, i, changed);
        }
        PyObject *controller_items[C_SIZE];
        load(controller, controller_items, C_SIZE);
        set(controller_items, C_PARTITION_EPOCH, num(RANK(epoch)));
#undef RANK
        PyObject *items[S_SIZE];
        load(t, items, S_SIZE);
        Py_DECREF(t);
        set(items, S_CONTROLLER, new_named(Py_TYPE(controller), C_SIZE, controller_items));
        set(items, S_REPLICAS, ranked);
        return new_named(c->state_type, S_SIZE, items);
    }
python:
    if (PyErr_Occurred()) {
        Py_DECREF(t);
        return NULL;
    }
    PyObject *dense = PyObject_CallOneArg(c->dense, t);
    Py_DECREF(t);
    return dense;
}

/* Ranks the partition epochs of the steps out[from:] (the Python helpers' steps). */
static int dense_from(const Context *c, const View *v, PyObject *out, Py_ssize_t from) {
    for (Py_ssize_t i = from; i < PyList_GET_SIZE(out); i++) {
        PyObject *step = PyList_GET_ITEM(out, i);
        if (!PyTuple_Check(step) || PyTuple_GET_SIZE(step) != 2) {
            PyErr_SetString(PyExc_SystemError, "kraft-replication successors: a step is not an (action, state)");
            return -1;
        }
        PyObject *t = PyTuple_GET_ITEM(step, 1);
        PyObject *ranked = dense(c, v, Py_NewRef(t));
        if (ranked == NULL) {
            return -1;
        }
        if (ranked == t) {
            Py_DECREF(ranked);
            continue;
        }
        PyObject *replaced = pair(Py_NewRef(PyTuple_GET_ITEM(step, 0)), ranked);
        if (replaced == NULL || PyList_SetItem(out, i, replaced) < 0) {
            return -1;
        }
    }
    return 0;
}

/* A Python helper of the model, called with ``args`` (it appends its steps to out); the steps of the
 * actions that can move a partition epoch then have their epochs ranked, as _successors does. */
static int call_back(const Context *c, const View *v, PyObject *out, int callback, PyObject **args, size_t nargs,
                     int rank) {
    Py_ssize_t from = PyList_GET_SIZE(out);
    PyObject *result = PyObject_Vectorcall(c->callbacks[callback], args, nargs, NULL);
    if (result == NULL) {
        return -1;
    }
    Py_DECREF(result);
    return rank ? dense_from(c, v, out, from) : 0;
}

/* A helper taking (s, b, out). */
static int call_broker(const Context *c, const View *v, PyObject *out, int callback, int b) {
    PyObject *id = num(b);
    if (id == NULL) {
        return -1;
    }
    PyObject *args[3] = {v->state, id, out};
    int status = call_back(c, v, out, callback, args, 3, 1);
    Py_DECREF(id);
    return status;
}

/* -- the leader ---------------------------------------------------------------------------------- */

static int produce(const Context *c, const View *v, int b, PyObject *out) {
    if (v->nextRecordId > c->ints[I_MAX_RECORDS]) {
        return 0;
    }
    const Rep *r = &v->r[b];
    if (c->ints[I_ACKS] == ACKS_ALL && popcount(r->isr) < c->ints[I_MIN_ISR]) {
        return 0;
    }
    long rid = v->nextRecordId;
    Py_ssize_t len = r->len;
    PyObject *log = PyTuple_New(len + 1);
    if (log == NULL) {
        return -1;
    }
    for (Py_ssize_t i = 0; i < len; i++) {
        PyTuple_SET_ITEM(log, i, Py_NewRef(PyTuple_GET_ITEM(r->log, i)));
    }
    PyObject *record_items[2] = {num(rid), num(r->leaderEpoch)};
    PyObject *record = new_named(c->record_type, 2, record_items);
    if (record == NULL) {
        Py_DECREF(log);
        return -1;
    }
    PyTuple_SET_ITEM(log, len, record);
    long hw = incremented_hw(c, b, r->hw, len + 1, r->isr, r->has_pending, r->pending_isr, r->fs_leo);
    int fields[2] = {R_LOG, R_HW};
    PyObject *values[2] = {log, num(hw)};
    PyObject *replica = replica_with(c, r, 2, fields, values);
    PyObject *items[S_SIZE];
    load(v->state, items, S_SIZE);
    set(items, S_NEXT_RECORD_ID, num(rid + 1));
    PyObject *next = update(c, v, b, replica, items);
    if (next != NULL && c->ints[I_ACKS] == ACKS_1) {
        PyObject *acked = PyFrozenSet_New(PyTuple_GET_ITEM(next, S_ACKED));
        PyObject *id = num(rid);
        if (acked == NULL || id == NULL || PySet_Add(acked, id) < 0) {
            Py_XDECREF(acked);
            Py_XDECREF(id);
            Py_DECREF(next);
            return -1;
        }
        Py_DECREF(id);
        PyObject *with_acked = put(next, S_ACKED, acked);
        Py_DECREF(next);
        if (with_acked == NULL) {
            return -1;
        }
        /* put made a plain tuple: give it the state's type */
        PyObject *state_items[S_SIZE];
        load(with_acked, state_items, S_SIZE);
        Py_DECREF(with_acked);
        next = new_named(c->state_type, S_SIZE, state_items);
    }
    return emit(out, act2(c, A_PRODUCE, b, rid), next);
}

/* The leader's AlterPartition proposal: the replica with a pending request (and maybe a new HW). */
static PyObject *proposed(const Context *c, const View *v, const Rep *r, unsigned isr, PyObject *epochs, long hw) {
    PyObject *isr_obj = mask_set(isr);
    PyObject *request_items[3] = {isr_obj, epochs, Py_NewRef(PyTuple_GET_ITEM(v->state, S_FAILOVERS))};
    PyObject *request = new_named(c->alter_partition_type, 3, request_items);
    if (hw == r->hw) {
        int fields[1] = {R_PENDING};
        PyObject *values[1] = {request};
        return replica_with(c, r, 1, fields, values);
    }
    int fields[2] = {R_PENDING, R_HW};
    PyObject *values[2] = {request, num(hw)};
    return replica_with(c, r, 2, fields, values);
}

static int shrink_isr(const Context *c, const View *v, int b, PyObject *out) {
    const Rep *r = &v->r[b];
    if (r->has_pending) {
        return 0;
    }
    for (int f = 0; f < v->n; f++) {
        if (!(r->isr & (1u << f)) || f == b || r->fs_leo[f] >= (long)r->len) {
            continue;
        }
        unsigned isr = r->isr & ~(1u << f);
        long hw = incremented_hw(c, b, r->hw, r->len, r->isr, 1, isr, r->fs_leo);
        PyObject *replica = proposed(c, v, r, isr, PyTuple_New(0), hw);
        if (emit(out, act2(c, A_SHRINK_ISR, b, f), update_replica(c, v, b, replica)) < 0) {
            return -1;
        }
    }
    return 0;
}

static int expand_isr(const Context *c, const View *v, int b, PyObject *out) {
    const Rep *r = &v->r[b];
    if (r->has_pending) {
        return 0;
    }
    long leso = 0;
    if (c->ints[I_ISR_EXPAND_LESO]) {
        leso = (long)r->len;
        for (Py_ssize_t offset = 0; offset < r->len; offset++) {
            if (r->epoch[offset] >= r->leaderEpoch) {
                leso = (long)offset;
                break;
            }
        }
    }
    for (int i = 0; i < r->nassignment; i++) {
        int f = r->assignment[i];
        if (f == b || (r->isr & (1u << f))) {
            continue;
        }
        long leo = r->fs_leo[f];
        if (leo < r->hw || leo < leso) {
            continue;
        }
        PyObject *epochs;
        if (c->ints[I_ISR_BROKER_EPOCH]) {
            PyObject *entry = pair(num(f), num(r->fs_epoch[f]));
            epochs = entry == NULL ? NULL : PyTuple_Pack(1, entry);
            Py_XDECREF(entry);
        } else {
            epochs = PyTuple_New(0);
        }
        PyObject *replica = proposed(c, v, r, r->isr | (1u << f), epochs, r->hw);
        if (emit(out, act2(c, A_EXPAND_ISR, b, f), update_replica(c, v, b, replica)) < 0) {
            return -1;
        }
    }
    return 0;
}

/* _epoch_error: leadership, then (KIP-320) the epoch; -1 for none. */
static int epoch_error(const Context *c, const Rep *leader, int leader_id, long current_leader_epoch) {
    if (leader->leader != leader_id) {
        return ERR_NOT_LEADER_OR_FOLLOWER;
    }
    if (c->ints[I_FETCH_FENCING] && current_leader_epoch != leader->leaderEpoch) {
        return current_leader_epoch < leader->leaderEpoch ? ERR_FENCED_LEADER_EPOCH : ERR_UNKNOWN_LEADER_EPOCH;
    }
    return -1;
}

static PyObject *fetch_response(const Context *c, int leader, long leaderEpoch, long fetchOffset, int error,
                                PyObject *records, long hw, long diverging_epoch, long diverging_end,
                                Py_ssize_t leo) {
    PyObject *items[8] = {num(leader),
                          num(leaderEpoch),
                          num(fetchOffset),
                          Py_NewRef(c->strings[error]),
                          records,
                          num(hw),
                          pair(num(diverging_epoch), num(diverging_end)),
                          PyLong_FromSsize_t(leo)};
    return new_named(c->fetch_response_type, 8, items);
}

/* The leader recording a follower's fetch: its follower state and maybe a new HW. */
static PyObject *leader_after_fetch(const Context *c, const Rep *l, int leader_id, int f, long fetchOffset,
                                    PyObject *replicaEpoch, long *hw) {
    PyObject *fs_old = PyTuple_GET_ITEM(l->obj, R_FOLLOWER_STATE);
    PyObject *followers = put(fs_old, f, pair(num(fetchOffset), Py_NewRef(replicaEpoch)));
    long fs_leo[MAX_BROKERS];
    for (int i = 0; i < MAX_BROKERS; i++) {
        fs_leo[i] = i == f ? fetchOffset : l->fs_leo[i];
    }
    *hw = incremented_hw(c, leader_id, l->hw, l->len, l->isr, l->has_pending, l->pending_isr, fs_leo);
    if (*hw == l->hw) {
        int fields[1] = {R_FOLLOWER_STATE};
        PyObject *values[1] = {followers};
        return replica_with(c, l, 1, fields, values);
    }
    int fields[2] = {R_FOLLOWER_STATE, R_HW};
    PyObject *values[2] = {followers, num(*hw)};
    return replica_with(c, l, 2, fields, values);
}

static int handle_fetch(const Context *c, const View *v, int f, PyObject *out) {
    PyObject *req = v->m[f].obj;
    int leader_id = (int)v->m[f].leader;
    const Rep *l = &v->r[leader_id];
    if (!l->running) {
        return 0;
    }
    if (PyTuple_GET_SIZE(req) != 5) {
        return 1;
    }
    long fetchOffset, lastFetchedEpoch, currentLeaderEpoch;
    int status;
    if ((status = read_long(PyTuple_GET_ITEM(req, 1), &fetchOffset)) != 0 ||
        (status = read_long(PyTuple_GET_ITEM(req, 2), &lastFetchedEpoch)) != 0 ||
        (status = read_long(PyTuple_GET_ITEM(req, 3), &currentLeaderEpoch)) != 0) {
        return status;
    }
    PyObject *replicaEpoch = PyTuple_GET_ITEM(req, 4);
    PyObject *action = act2(c, A_HANDLE_FETCH, leader_id, f);
    int error = epoch_error(c, l, leader_id, currentLeaderEpoch);
    if (error < 0 && !(l->assignment_mask & (1u << f))) {
        error = ERR_NOT_LEADER_OR_FOLLOWER;
    }
    if (error < 0 && c->ints[I_TRUNCATION] == TRUNC_DIVERGING_EPOCH && fetchOffset > 0) {
        long epoch, end;
        end_offset_for_epoch(l->len, l->epoch, lastFetchedEpoch, l->leaderEpoch, &epoch, &end);
        if (end < fetchOffset || epoch < lastFetchedEpoch) {
            PyObject *response = fetch_response(c, leader_id, currentLeaderEpoch, fetchOffset, ERR_DIVERGING_EPOCH,
                                                PyTuple_New(0), UNDEFINED, epoch, end, l->len);
            if (c->ints[I_DIVERGING_FETCH_NOT_COUNTED]) {
                return emit(out, action, with_fetch(c, v, f, response));
            }
            long hw;
            PyObject *updated = leader_after_fetch(c, l, leader_id, f, fetchOffset, replicaEpoch, &hw);
            PyObject *items[S_SIZE];
            load(v->state, items, S_SIZE);
            set(items, S_FETCHES, put(v->fetches, f, response));
            return emit(out, action, update(c, v, leader_id, updated, items));
        }
    } else if (error < 0 && fetchOffset > (long)l->len) {
        error = ERR_OFFSET_OUT_OF_RANGE;
    }
    if (error >= 0) {
        PyObject *response = fetch_response(c, leader_id, currentLeaderEpoch, fetchOffset, error, PyTuple_New(0),
                                            UNDEFINED, UNDEFINED, UNDEFINED, l->len);
        return emit(out, action, with_fetch(c, v, f, response));
    }
    long hw;
    PyObject *updated = leader_after_fetch(c, l, leader_id, f, fetchOffset, replicaEpoch, &hw);
    PyObject *response = fetch_response(c, leader_id, currentLeaderEpoch, fetchOffset, ERR_NONE,
                                        tail(l->log, fetchOffset), hw, UNDEFINED, UNDEFINED, l->len);
    PyObject *items[S_SIZE];
    load(v->state, items, S_SIZE);
    set(items, S_FETCHES, put(v->fetches, f, response));
    return emit(out, action, update(c, v, leader_id, updated, items));
}

/* -- followers ------------------------------------------------------------------------------------ */

static int send_fetch(const Context *c, const View *v, int f, PyObject *out) {
    const Rep *r = &v->r[f];
    int leader_id = (int)r->leader;
    if (leader_id == NO_LEADER || v->m[f].kind != MSG_NONE || !v->r[leader_id].running) {
        return 0;
    }
    if (r->truncating) {
        PyObject *items[3] = {num(leader_id), num(r->leaderEpoch), num(last_epoch(r))};
        PyObject *ask = new_named(c->ofle_request_type, 3, items);
        return emit(out, act2(c, A_SEND_OFLE, f, leader_id), with_fetch(c, v, f, ask));
    }
    PyObject *items[5] = {num(leader_id), PyLong_FromSsize_t(r->len), num(last_epoch(r)), num(r->leaderEpoch),
                          Py_NewRef(PyTuple_GET_ITEM(r->obj, R_BROKER_EPOCH))};
    PyObject *request = new_named(c->fetch_request_type, 5, items);
    return emit(out, act2(c, A_SEND_FETCH, f, leader_id), with_fetch(c, v, f, request));
}

static int read_error(const Context *c, PyObject *value) {
    for (int e = ERR_NONE; e <= ERR_OFFSET_OUT_OF_RANGE; e++) {
        if (value == c->strings[e]) {
            return e;
        }
    }
    for (int e = ERR_NONE; e <= ERR_OFFSET_OUT_OF_RANGE; e++) {
        if (is_string(value, c->strings[e])) {
            return e;
        }
    }
    return -1;
}

static int handle_fetch_response(const Context *c, const View *v, int f, PyObject *out) {
    PyObject *response = v->m[f].obj;
    if (PyTuple_GET_SIZE(response) != 8) {
        return 1;
    }
    const Rep *r = &v->r[f];
    long leader = v->m[f].leader, leaderEpoch, fetchOffset;
    int status;
    if ((status = read_long(PyTuple_GET_ITEM(response, 1), &leaderEpoch)) != 0 ||
        (status = read_long(PyTuple_GET_ITEM(response, 2), &fetchOffset)) != 0) {
        return status;
    }
    int error = read_error(c, PyTuple_GET_ITEM(response, 3));
    if (error < 0) {
        return 1;
    }
    PyObject *action = act2(c, A_HANDLE_FETCH_RESPONSE, f, leader);
    int current = r->leader == leader && r->leaderEpoch == leaderEpoch && (long)r->len == fetchOffset;
    if (!current || error == ERR_NOT_LEADER_OR_FOLLOWER || error == ERR_FENCED_LEADER_EPOCH ||
        error == ERR_UNKNOWN_LEADER_EPOCH) {
        return emit(out, action, with_fetch(c, v, f, Py_NewRef(Py_None)));
    }
    PyObject *log;
    long hw;
    if (error == ERR_NONE) {
        PyObject *records = PyTuple_GET_ITEM(response, 4);
        long response_hw;
        if (!PyTuple_CheckExact(records)) {
            return 1;
        }
        if ((status = read_long(PyTuple_GET_ITEM(response, 5), &response_hw)) != 0) {
            return status;
        }
        log = PyTuple_GET_SIZE(records) ? PySequence_Concat(r->log, records) : Py_NewRef(r->log);
        if (log == NULL) {
            return -1;
        }
        hw = response_hw < PyTuple_GET_SIZE(log) ? response_hw : (long)PyTuple_GET_SIZE(log);
    } else {
        long offset;
        if (error == ERR_DIVERGING_EPOCH) {
            PyObject *diverging = PyTuple_GET_ITEM(response, 6);
            long epoch, end;
            int done;
            if (!is_tuple(diverging, NULL, 2)) {
                return 1;
            }
            if ((status = read_long(PyTuple_GET_ITEM(diverging, 0), &epoch)) != 0 ||
                (status = read_long(PyTuple_GET_ITEM(diverging, 1), &end)) != 0) {
                return status;
            }
            offset = truncation_offset(r, epoch, end, &done);
        } else {
            long leo;
            if ((status = read_long(PyTuple_GET_ITEM(response, 7), &leo)) != 0) {
                return status;
            }
            offset = leo < (long)r->len ? leo : (long)r->len;
        }
        log = head(r->log, offset);
        if (log == NULL) {
            return -1;
        }
        hw = r->hw < PyTuple_GET_SIZE(log) ? r->hw : (long)PyTuple_GET_SIZE(log);
    }
    int fields[2] = {R_LOG, R_HW};
    PyObject *values[2] = {log, num(hw)};
    PyObject *updated = replica_with(c, r, 2, fields, values);
    PyObject *items[S_SIZE];
    load(v->state, items, S_SIZE);
    set(items, S_FETCHES, put(v->fetches, f, Py_NewRef(Py_None)));
    return emit(out, action, update(c, v, f, updated, items));
}

/* -- metadata and brokers ------------------------------------------------------------------------- */

static PyObject *controller_item(const View *v, int field) { return Py_NewRef(PyTuple_GET_ITEM(v->controller, field)); }

static int apply_metadata(const Context *c, const View *v, int b, PyObject *out) {
    const Rep *r = &v->r[b];
    PyObject *updated;
    if (v->c_leader == b) {
        int same_epoch = r->leader == b && r->leaderEpoch == v->c_leaderEpoch;
        if (same_epoch && r->partitionEpoch == v->c_partitionEpoch && r->isr == v->c_isr) {
            return 0;
        }
        PyObject *items[R_SIZE];
        long fs_leo[MAX_BROKERS];
        load(r->obj, items, R_SIZE);
        set(items, R_PARTITION_EPOCH, controller_item(v, C_PARTITION_EPOCH));
        set(items, R_ISR, controller_item(v, C_ISR));
        set(items, R_PENDING, Py_NewRef(Py_None));
        set(items, R_ASSIGNMENT, controller_item(v, C_REPLICAS));
        if (same_epoch) {
            /* a replica that left the assignment leaves remoteReplicasMap */
            PyObject *followers = PyTuple_New(v->n);
            if (followers == NULL) {
                set(items, R_FOLLOWER_STATE, NULL);
            } else {
                PyObject *old = PyTuple_GET_ITEM(r->obj, R_FOLLOWER_STATE);
                for (int i = 0; i < v->n; i++) {
                    int kept = (v->c_replicas & (1u << i)) != 0;
                    PyTuple_SET_ITEM(followers, i, Py_NewRef(kept ? PyTuple_GET_ITEM(old, i)
                                                                  : PyTuple_GET_ITEM(c->unknown_followers, i)));
                    fs_leo[i] = kept ? r->fs_leo[i] : UNDEFINED;
                }
                set(items, R_FOLLOWER_STATE, followers);
            }
        } else {
            /* makeLeader: a new epoch starts at the LEO; nothing is known of the followers yet */
            set(items, R_LEADER, num(b));
            set(items, R_LEADER_EPOCH, controller_item(v, C_LEADER_EPOCH));
            set(items, R_FOLLOWER_STATE, Py_NewRef(c->unknown_followers));
            set(items, R_FETCH_STATE, Py_NewRef(c->strings[STR_FETCHING]));
            set(items, R_HOSTED, Py_NewRef(Py_True));
            for (int i = 0; i < MAX_BROKERS; i++) {
                fs_leo[i] = UNDEFINED;
            }
        }
        long hw = incremented_hw(c, b, r->hw, r->len, v->c_isr, 0, 0, fs_leo);
        if (hw != r->hw) {
            set(items, R_HW, num(hw));
        }
        updated = new_named(c->replica_type, R_SIZE, items);
    } else if (!(v->c_replicas & (1u << b))) {
        return r->hosted ? call_broker(c, v, out, CB_APPLY_METADATA, b) : 0;
    } else {
        if (r->leader == v->c_leader && r->leaderEpoch == v->c_leaderEpoch && r->hosted) {
            return 0;
        }
        PyObject *log = c->ints[I_TRUNCATION] == TRUNC_HW ? head(r->log, r->hw) : Py_NewRef(r->log);
        int truncating = c->ints[I_TRUNCATION] == TRUNC_OFFSETS_FOR_LEADER_EPOCH && log != NULL &&
                         PyTuple_GET_SIZE(log) > 0;
        PyObject *items[R_SIZE];
        load(r->obj, items, R_SIZE);
        set(items, R_LOG, log);
        set(items, R_LEADER, controller_item(v, C_LEADER));
        set(items, R_LEADER_EPOCH, controller_item(v, C_LEADER_EPOCH));
        set(items, R_PARTITION_EPOCH, num(UNDEFINED));
        set(items, R_ISR, mask_set(0));
        set(items, R_PENDING, Py_NewRef(Py_None));
        set(items, R_FOLLOWER_STATE, Py_NewRef(c->unknown_followers));
        set(items, R_FETCH_STATE, Py_NewRef(c->strings[truncating ? STR_TRUNCATING : STR_FETCHING]));
        set(items, R_HOSTED, Py_NewRef(Py_True));
        set(items, R_ASSIGNMENT, PyTuple_New(0));
        updated = new_named(c->replica_type, R_SIZE, items);
    }
    return emit(out, act1(c, A_APPLY_METADATA, b), dense(c, v, update_replica(c, v, b, updated)));
}

/* _drop_fetches: a stopped broker's own fetch and every fetch sent to it are gone. */
static PyObject *drop_fetches(const View *v, int b) {
    PyObject *fetches = PyTuple_New(v->n);
    if (fetches == NULL) {
        return NULL;
    }
    for (int f = 0; f < v->n; f++) {
        const Msg *m = &v->m[f];
        int dropped = f == b || (m->kind != MSG_NONE && m->leader == b);
        PyTuple_SET_ITEM(fetches, f, Py_NewRef(dropped ? Py_None : m->obj));
    }
    return fetches;
}

static int crash(const Context *c, const View *v, int b, PyObject *out) {
    const Rep *r = &v->r[b];
    long leo = (long)r->len, first = 0, last = leo;
    if (c->ints[I_CRASH] == CRASH_PROCESS) {
        first = leo;
    } else if (c->ints[I_CRASH] == CRASH_DISK) {
        last = 0;
    }
    for (long keep = first; keep <= last; keep++) {
        PyObject *replica_items[R_SIZE] = {
            Py_NewRef(Py_False),  Py_NewRef(PyTuple_GET_ITEM(r->obj, R_BROKER_EPOCH)),
            num(UNDEFINED),       head(r->log, keep),
            num(r->hw < keep ? r->hw : keep),
            num(NO_LEADER),       num(UNDEFINED),
            num(UNDEFINED),       mask_set(0),
            Py_NewRef(Py_None),   Py_NewRef(c->unknown_followers),
            Py_NewRef(c->strings[STR_FETCHING]),
            Py_NewRef(Py_True),   PyTuple_New(0),
        };
        PyObject *down = new_named(c->replica_type, R_SIZE, replica_items);
        PyObject *items[S_SIZE];
        load(v->state, items, S_SIZE);
        set(items, S_FETCHES, drop_fetches(v, b));
        set(items, S_CRASHES, num(v->crashes + 1));
        if (emit(out, act2(c, A_CRASH, b, keep), dense(c, v, update(c, v, b, down, items))) < 0) {
            return -1;
        }
    }
    return 0;
}

/* controller_changes[(name, c, arg)]: borrowed, or NULL when not computed yet (or on an error). */
static PyObject *remembered_as(const Context *c, const View *v, PyObject *name, PyObject *arg) {
    PyObject *key = PyTuple_Pack(3, name, v->controller, arg);
    if (key == NULL) {
        return NULL;
    }
    PyObject *changed = PyDict_GetItemWithError(c->changes, key);
    Py_DECREF(key);
    return changed;
}

static PyObject *remembered(const Context *c, const View *v, PyObject *name, int b) {
    PyObject *id = num(b);
    if (id == NULL) {
        return NULL;
    }
    PyObject *changed = remembered_as(c, v, name, id);
    Py_DECREF(id);
    return changed;
}

static PyObject *with_controller(const Context *c, const View *v, PyObject *controller, long fences) {
    PyObject *items[S_SIZE];
    load(v->state, items, S_SIZE);
    set(items, S_CONTROLLER, Py_NewRef(controller));
    if (fences >= 0) {
        set(items, S_FENCES, num(fences));
    }
    return new_named(c->state_type, S_SIZE, items);
}

static int unfence(const Context *c, const View *v, int b, PyObject *out) {
    if (!(v->c_fenced & (1u << b)) || v->r[b].brokerEpoch != v->c_brokerEpochs[b]) {
        return 0;
    }
    PyObject *unfenced = remembered(c, v, c->unfence_key, b);
    if (unfenced == NULL) {
        return PyErr_Occurred() ? -1 : call_broker(c, v, out, CB_UNFENCE, b);
    }
    if (unfenced == Py_None) {
        return 0;
    }
    return emit(out, act1(c, A_UNFENCE, b), dense(c, v, with_controller(c, v, unfenced, -1)));
}

static int fence(const Context *c, const View *v, int b, PyObject *out) {
    PyObject *fenced = remembered(c, v, c->fence_key, b);
    if (fenced == NULL) {
        return PyErr_Occurred() ? -1 : call_broker(c, v, out, CB_FENCE, b);
    }
    if (fenced == Py_None) {
        return 0;
    }
    long fences = v->r[b].running ? v->fences + 1 : -1;
    return emit(out, act1(c, A_FENCE, b), dense(c, v, with_controller(c, v, fenced, fences)));
}

/* The leader's replica with its request's sentTo changed (the request kept otherwise). */
static PyObject *with_sent_to(const Context *c, const Rep *r, long sentTo) {
    PyObject *request = PyTuple_GET_ITEM(r->obj, R_PENDING);
    PyObject *items[3] = {Py_NewRef(PyTuple_GET_ITEM(request, 0)), Py_NewRef(PyTuple_GET_ITEM(request, 1)),
                          num(sentTo)};
    int fields[1] = {R_PENDING};
    PyObject *values[1] = {new_named(c->alter_partition_type, 3, items)};
    return replica_with(c, r, 1, fields, values);
}

/* ReplicationControlManager.alterPartition and the leader handling the answer (the controller's
 * side of a commit is remembered in controller_changes; when it is not yet, the Python runs). */
static int handle_alter_partition(const Context *c, const View *v, int b, PyObject *out) {
    const Rep *r = &v->r[b];
    PyObject *action = act1(c, A_HANDLE_ALTER_PARTITION, b);
    if (r->pending_sentTo != v->failovers) {
        /* NOT_CONTROLLER: the same request is sent again to the active controller */
        return emit(out, action, dense(c, v, update_replica(c, v, b, with_sent_to(c, r, v->failovers))));
    }
    int error = ERR_NONE;
    PyObject *request = PyTuple_GET_ITEM(r->obj, R_PENDING);
    if (v->c_leader != b || v->c_leaderEpoch != r->leaderEpoch) {
        error = ERR_FENCED_LEADER_EPOCH;
    } else if (v->c_partitionEpoch != r->partitionEpoch) {
        error = -1; /* INVALID_UPDATE_VERSION */
    } else if (r->pending_isr & ~v->c_isr & v->c_fenced) {
        error = -2; /* INELIGIBLE_REPLICA */
    } else {
        PyObject *epochs = PyTuple_GET_ITEM(request, 1);
        if (!PyTuple_Check(epochs)) {
            return 1;
        }
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(epochs) && error == ERR_NONE; i++) {
            PyObject *entry = PyTuple_GET_ITEM(epochs, i);
            long id, epoch;
            int status;
            if (!is_tuple(entry, NULL, 2)) {
                return 1;
            }
            if ((status = read_long(PyTuple_GET_ITEM(entry, 0), &id)) != 0 ||
                (status = read_long(PyTuple_GET_ITEM(entry, 1), &epoch)) != 0) {
                return status;
            }
            if (id < 0 || id >= v->n) {
                return 1;
            }
            if (epoch != v->c_brokerEpochs[id]) {
                error = -3; /* STALE_BROKER_EPOCH */
            }
        }
    }
    if (error == ERR_NONE) {
        PyObject *committed = remembered_as(c, v, c->commit_key, PyTuple_GET_ITEM(request, 0));
        if (committed == NULL) {
            return PyErr_Occurred() ? -1 : call_broker(c, v, out, CB_HANDLE_ALTER_PARTITION, b);
        }
        if (committed == Py_None) {
            return 0; /* a leader epoch bump past the bound */
        }
        long leader;
        unsigned isr;
        int status;
        if (!PyTuple_Check(committed) || PyTuple_GET_SIZE(committed) != C_SIZE) {
            return 1;
        }
        if ((status = read_long(PyTuple_GET_ITEM(committed, C_LEADER), &leader)) != 0 ||
            (status = read_mask(PyTuple_GET_ITEM(committed, C_ISR), v->n, &isr)) != 0) {
            return status;
        }
        PyObject *updated;
        if (leader != b) {
            /* a completed reassignment removed this leader: it keeps its maximal ISR */
            updated = with_sent_to(c, r, AWAITING_METADATA);
        } else {
            long hw = incremented_hw(c, b, r->hw, r->len, isr, 0, 0, r->fs_leo);
            int fields[4] = {R_PARTITION_EPOCH, R_ISR, R_PENDING, R_HW};
            PyObject *values[4] = {Py_NewRef(PyTuple_GET_ITEM(committed, C_PARTITION_EPOCH)),
                                   Py_NewRef(PyTuple_GET_ITEM(committed, C_ISR)), Py_NewRef(Py_None), num(hw)};
            updated = replica_with(c, r, hw == r->hw ? 3 : 4, fields, values);
            if (hw == r->hw) {
                Py_XDECREF(values[3]);
            }
        }
        PyObject *items[S_SIZE];
        load(v->state, items, S_SIZE);
        set(items, S_CONTROLLER, Py_NewRef(committed));
        return emit(out, action, dense(c, v, update(c, v, b, updated, items)));
    }
    PyObject *updated;
    if ((error == ERR_FENCED_LEADER_EPOCH || error == -1) && c->ints[I_AWAITS_METADATA]) {
        /* the request may have been applied by a controller whose answer was lost */
        updated = with_sent_to(c, r, AWAITING_METADATA);
    } else {
        int fields[1] = {R_PENDING};
        PyObject *values[1] = {Py_NewRef(Py_None)};
        updated = replica_with(c, r, 1, fields, values);
    }
    return emit(out, action, dense(c, v, update_replica(c, v, b, updated)));
}

/* -- the successors -------------------------------------------------------------------------------- */

/* Every step, in _successors' order: -1 on an error, 1 for a state left to the Python. */
static int all_steps(const Context *c, const View *v, PyObject *out) {
    int may_crash = v->crashes < c->ints[I_MAX_CRASHES], may_shut_down = v->shutdowns < c->ints[I_MAX_SHUTDOWNS];
    int may_fence = v->fences < c->ints[I_MAX_FENCES], status;
#define STEP(call)                                                                                                 \
    if ((status = (call)) != 0) {                                                                                  \
        return status;                                                                                             \
    }
    for (int b = 0; b < v->n; b++) {
        const Rep *r = &v->r[b];
        int fenced = (v->c_fenced & (1u << b)) != 0;
        if (r->running) {
            if (r->leader == b) {
                STEP(produce(c, v, b, out));
                STEP(shrink_isr(c, v, b, out));
                STEP(expand_isr(c, v, b, out));
                if (r->has_pending && r->pending_sentTo != AWAITING_METADATA) {
                    STEP(handle_alter_partition(c, v, b, out));
                }
            } else if (r->hosted) {
                STEP(send_fetch(c, v, b, out));
            }
            if (v->m[b].kind == MSG_FETCH_RESPONSE) {
                STEP(handle_fetch_response(c, v, b, out));
            } else if (v->m[b].kind == MSG_OFLE_RESPONSE) {
                PyObject *id = num(b);
                if (id == NULL) {
                    return -1;
                }
                PyObject *args[4] = {v->state, id, v->m[b].obj, out};
                status = call_back(c, v, out, CB_HANDLE_OFLE_RESPONSE, args, 4, 0);
                Py_DECREF(id);
                STEP(status);
            }
            STEP(apply_metadata(c, v, b, out));
            if (may_crash) {
                STEP(crash(c, v, b, out));
            }
            if (may_shut_down) {
                STEP(call_broker(c, v, out, CB_CONTROLLED_SHUTDOWN, b));
            }
            if (fenced) {
                STEP(unfence(c, v, b, out));
            }
        } else if (fenced) {
            STEP(call_broker(c, v, out, CB_RESTART, b));
        }
        if (!fenced && (may_fence || !r->running)) {
            STEP(fence(c, v, b, out));
        }
    }
    PyObject *args[2] = {v->state, out};
    if (v->failovers < c->ints[I_MAX_CONTROLLER_FAILOVERS]) {
        STEP(call_back(c, v, out, CB_CONTROLLER_FAILOVER, args, 2, 1));
    }
    if (v->reassignments < c->ints[I_MAX_REASSIGNMENTS]) {
        STEP(call_back(c, v, out, CB_REASSIGNMENTS, args, 2, 1));
    }
    for (int f = 0; f < v->n; f++) {
        if (v->m[f].kind == MSG_FETCH_REQUEST) {
            STEP(handle_fetch(c, v, f, out));
        } else if (v->m[f].kind == MSG_OFLE_REQUEST) {
            PyObject *id = num(f);
            if (id == NULL) {
                return -1;
            }
            PyObject *request_args[5] = {v->state, PyTuple_GET_ITEM(v->m[f].obj, 0), id, v->m[f].obj, out};
            status = call_back(c, v, out, CB_HANDLE_OFLE, request_args, 5, 0);
            Py_DECREF(id);
            STEP(status);
        }
    }
#undef STEP
    return 0;
}

static int context_error(const char *message) {
    PyErr_Format(PyExc_TypeError, "successors(ctx, state): %s", message);
    return -1;
}

static int read_items(PyObject *t, Py_ssize_t size, PyObject **out) {
    if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) != size) {
        return -1;
    }
    for (Py_ssize_t i = 0; i < size; i++) {
        out[i] = PyTuple_GET_ITEM(t, i);
    }
    return 0;
}

static int read_context(PyObject *ctx, Context *c) {
    PyObject *parts[11], *types[N_TYPES];
    if (read_items(ctx, 11, parts) < 0) {
        return context_error("ctx is not KraftReplicationModel's context");
    }
    if (read_items(parts[0], N_TYPES, types) < 0 || read_items(parts[1], N_STRINGS, c->strings) < 0 ||
        read_items(parts[7], N_CALLBACKS, c->callbacks) < 0 || read_items(parts[8], N_TABLES, c->tables) < 0) {
        return context_error("the context's types, strings, callbacks or tables are not tuples of their size");
    }
    PyTypeObject **slots[N_TYPES] = {&c->state_type,          &c->replica_type,        &c->record_type,
                                     &c->alter_partition_type, &c->fetch_request_type, &c->fetch_response_type,
                                     &c->ofle_request_type,    &c->ofle_response_type};
    for (int i = 0; i < N_TYPES; i++) {
        if (!PyType_Check(types[i]) || !PyType_IsSubtype((PyTypeObject *)types[i], &PyTuple_Type)) {
            return context_error("the context's types must be tuple types");
        }
        *slots[i] = (PyTypeObject *)types[i];
    }
    for (int i = 0; i < N_STRINGS; i++) {
        if (!PyUnicode_CheckExact(c->strings[i])) {
            return context_error("the context's strings must be str");
        }
    }
    for (int i = 0; i < N_TABLES; i++) {
        if (!PyList_Check(c->tables[i])) {
            return context_error("the action tables must be lists");
        }
    }
    c->unknown_followers = parts[2];
    c->changes = parts[3];
    c->dense = parts[4];
    c->unfence_key = parts[5];
    c->fence_key = parts[6];
    c->commit_key = parts[10];
    if (!PyTuple_Check(c->unknown_followers) || !PyDict_Check(c->changes)) {
        return context_error("unknown_followers must be a tuple and controller_changes a dict");
    }
    PyObject *ints[N_INTS];
    if (read_items(parts[9], N_INTS, ints) < 0) {
        return context_error("the configuration is not a tuple of its size");
    }
    for (int i = 0; i < N_INTS; i++) {
        c->ints[i] = PyLong_AsLong(ints[i]);
        if (c->ints[i] == -1 && PyErr_Occurred()) {
            return -1;
        }
    }
    long n = c->ints[I_BROKERS];
    if (n < 1 || n > MAX_BROKERS || PyTuple_GET_SIZE(c->unknown_followers) != n) {
        return context_error("the number of brokers is out of range");
    }
    for (int i = 0; i < N_TABLES; i++) {
        if (PyList_GET_SIZE(c->tables[i]) != n) {
            return context_error("every action table has a row per broker");
        }
    }
    if (PyList_GET_SIZE(PyList_GET_ITEM(c->tables[A_PRODUCE], 0)) != c->ints[I_MAX_RECORDS] + 1 ||
        PyList_GET_SIZE(PyList_GET_ITEM(c->tables[A_CRASH], 0)) != c->ints[I_MAX_RECORDS] + 1) {
        return context_error("the Produce and BrokerCrash tables go up to max_records");
    }
    return 0;
}

static PyObject *successors(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "successors(ctx, state) takes two arguments");
        return NULL;
    }
    Context c;
    if (read_context(args[0], &c) < 0) {
        return NULL;
    }
    View v;
    int status = read_view(&c, args[1], &v);
    if (status < 0) {
        return NULL;
    }
    if (status > 0 || !within_tables(&c, &v)) {
        Py_RETURN_NONE;
    }
    PyObject *out = PyList_New(0);
    if (out == NULL) {
        return NULL;
    }
    status = all_steps(&c, &v, out);
    if (status != 0) {
        Py_DECREF(out);
        if (status < 0) {
            return NULL;
        }
        Py_RETURN_NONE;
    }
    return out;
}

static PyMethodDef methods[] = {
    {"successors", (PyCFunction)(void (*)(void))successors, METH_FASTCALL,
     "successors(ctx, state) -> list of (action, state), or None for a state left to the Python."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_kraft_replication", "The kraft-replication model's successor function, in C.", -1,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__kraft_replication(void) { return PyModule_Create(&module); }
