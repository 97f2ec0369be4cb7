/* The kraft-replication C successors: building the model's tuples, the leader's HW, _update and its
 * ghosts, dense_partition_epochs, and the calls into the model's Python for the rare steps. */
#include "kraft_replication.h"

static PyObject *mask_sets[1 << MAX_BROKERS]; /* the frozenset of each broker mask, made once */

PyObject *kr_mask_set(unsigned mask) {
    return tuples_mask_set(mask_sets, MAX_BROKERS, mask);
}

/* -- building values (every maker steals the references it is given, and checks them) ------------ */

PyObject *kr_pair(PyObject *a, PyObject *b) {
    PyObject *pair[PAIR_SIZE] = {[PAIR_FIRST] = a, [PAIR_SECOND] = b};
    return tuples_new_named(&PyTuple_Type, PAIR_SIZE, pair);
}

/* A slice bound ``k`` of a sequence of ``len`` items as Python reads it: from the end when negative
 * (PyTuple_GetSlice clamps one past the end itself). */
static Py_ssize_t slice_bound(long k, Py_ssize_t len) {
    if (k < 0) {
        k += len;
    }
    return k < 0 ? 0 : k;
}

/* ``log[:k]`` as Python slices it. */
PyObject *kr_head(PyObject *log, long k) {
    return PyTuple_GetSlice(log, 0, slice_bound(k, PyTuple_GET_SIZE(log)));
}

/* ``log[k:]`` as Python slices it. */
PyObject *kr_tail(PyObject *log, long k) {
    Py_ssize_t len = PyTuple_GET_SIZE(log);
    return PyTuple_GetSlice(log, slice_bound(k, len), len);
}

/* with_fetches(s, tuples_put(s.fetches, f, message)), message stolen. */
PyObject *kr_with_fetch(const Context *c, const View *v, int f, PyObject *message) {
    PyObject *items[S_SIZE];
    load(v->state, items, S_SIZE);
    set(items, S_FETCHES, tuples_put(v->fetches, f, message));
    return tuples_new_named(c->state_type, S_SIZE, items);
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
long kr_incremented_hw(const Context *c, int b, long hw, Py_ssize_t leo, unsigned isr, int has_pending,
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
void kr_end_offset_for_epoch(Py_ssize_t len, const long *epochs, long requested, long latest, long *epoch,
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


/* The ghosts of _update, for broker b's new replica (already in items): a leader's HW advance extends
 * what consumers read and what is committed, and completes acks=all produce requests. -1 on error. */
static int ghosts(const Context *c, const View *v, int b, PyObject *replica, PyObject **items) {
    const Rep *old = &v->r[b];
    long hw, leader, leaderEpoch;
    int running, status;
    if ((status = tuples_read_long(PyTuple_GET_ITEM(replica, R_LEADER), &leader)) != 0 ||
        (status = tuples_read_long(PyTuple_GET_ITEM(replica, R_HIGH_WATERMARK), &hw)) != 0 ||
        (status = tuples_read_bool(PyTuple_GET_ITEM(replica, R_RUNNING), &running)) != 0 ||
        (status = tuples_read_long(PyTuple_GET_ITEM(replica, R_LEADER_EPOCH), &leaderEpoch)) != 0) {
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
        set(items, S_CONSUMED, kr_head(log, hw));
        if (items[S_CONSUMED] == NULL) {
            return -1;
        }
    }
    PyObject *controller = items[S_CONTROLLER];
    long c_leader, c_epoch;
    if ((status = tuples_read_long(PyTuple_GET_ITEM(controller, C_LEADER), &c_leader)) != 0 ||
        (status = tuples_read_long(PyTuple_GET_ITEM(controller, C_LEADER_EPOCH), &c_epoch)) != 0) {
        if (status > 0) {
            PyErr_SetString(PyExc_SystemError, "kraft-replication successors: a controller built here is unreadable");
        }
        return -1;
    }
    if (c_leader == b && c_epoch == leaderEpoch && hw > PyTuple_GET_SIZE(items[S_COMMITTED])) {
        set(items, S_COMMITTED, kr_head(log, hw));
        if (items[S_COMMITTED] == NULL) {
            return -1;
        }
    }
    if (c->ints[I_ACKS] != ACKS_ALL || old->leader != b || old->leaderEpoch != leaderEpoch) {
        return 0;
    }
    unsigned isr, pending_isr = 0;
    PyObject *pending = PyTuple_GET_ITEM(replica, R_PENDING_ALTER_PARTITION);
    if ((status = kr_read_mask(PyTuple_GET_ITEM(replica, R_ISR), v->n, &isr)) != 0 ||
        (pending != Py_None && (status = kr_read_mask(PyTuple_GET_ITEM(pending, AP_ISR), v->n, &pending_isr)) != 0)) {
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
        if (tuples_read_long(PyTuple_GET_ITEM(record, REC_EPOCH), &epoch) != 0) {
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
        if (PySet_Add(acked, PyTuple_GET_ITEM(record, REC_ID)) < 0) {
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
PyObject *kr_update(const Context *c, const View *v, int b, PyObject *replica, PyObject **items) {
    if (replica == NULL) {
        for (int i = 0; i < S_SIZE; i++) {
            Py_XDECREF(items[i]);
        }
        return NULL;
    }
    set(items, S_REPLICAS, tuples_put(v->replicas, b, Py_NewRef(replica)));
    int status = items[S_REPLICAS] == NULL ? -1 : ghosts(c, v, b, replica, items);
    Py_DECREF(replica);
    if (status < 0) {
        for (int i = 0; i < S_SIZE; i++) {
            Py_XDECREF(items[i]);
        }
        return NULL;
    }
    return tuples_new_named(c->state_type, S_SIZE, items);
}

/* _update with only the replica changed. */
PyObject *kr_update_replica(const Context *c, const View *v, int b, PyObject *replica) {
    PyObject *items[S_SIZE];
    load(v->state, items, S_SIZE);
    return kr_update(c, v, b, replica, items);
}

/* A replica with some fields replaced (values stolen). */
PyObject *kr_replica_with(const Context *c, const Rep *r, int k, const int *fields, PyObject **values) {
    PyObject *items[R_SIZE];
    load(r->obj, items, R_SIZE);
    for (int i = 0; i < k; i++) {
        set(items, fields[i], values[i]);
    }
    return tuples_new_named(c->replica_type, R_SIZE, items);
}

static long rank_of(const long *present, int count, long e) {
    long rank = 0;
    for (int j = 0; j < count; j++) {
        rank += present[j] < e;
    }
    return rank;
}

/* dense_partition_epochs: partition epochs as ranks 0..k-1 of the values present. t is stolen. */
PyObject *kr_dense(const Context *c, const View *v, PyObject *t) {
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
        tuples_read_long(PyTuple_GET_ITEM(controller, C_PARTITION_EPOCH), &epoch) != 0) {
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
            if (!is_tuple(r, c->replica_type, R_SIZE) || tuples_read_long(PyTuple_GET_ITEM(r, R_PARTITION_EPOCH), &e) != 0) {
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
            PyObject *changed = tuples_new_named(c->replica_type, R_SIZE, items);
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
        set(items, S_CONTROLLER, tuples_new_named(Py_TYPE(controller), C_SIZE, controller_items));
        set(items, S_REPLICAS, ranked);
        return tuples_new_named(c->state_type, S_SIZE, items);
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
        if (!PyTuple_Check(step) || PyTuple_GET_SIZE(step) != STEP_SIZE) {
            PyErr_SetString(PyExc_SystemError, "kraft-replication successors: a step is not an (action, state)");
            return -1;
        }
        PyObject *t = PyTuple_GET_ITEM(step, STEP_STATE);
        PyObject *ranked = kr_dense(c, v, Py_NewRef(t));
        if (ranked == NULL) {
            return -1;
        }
        if (ranked == t) {
            Py_DECREF(ranked);
            continue;
        }
        PyObject *replaced = kr_pair(Py_NewRef(PyTuple_GET_ITEM(step, STEP_ACTION)), ranked);
        if (replaced == NULL || PyList_SetItem(out, i, replaced) < 0) {
            return -1;
        }
    }
    return 0;
}

/* A Python helper of the model, called with ``args`` (it appends its steps to out); the steps of the
 * actions that can move a partition epoch then have their epochs ranked, as _successors does. */
int kr_call_back(const Context *c, const View *v, PyObject *out, int callback, PyObject **args, size_t nargs,
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
int kr_call_broker(const Context *c, const View *v, PyObject *out, int callback, int b) {
    PyObject *id = num(b);
    if (id == NULL) {
        return -1;
    }
    PyObject *args[3] = {v->state, id, out};
    int status = kr_call_back(c, v, out, callback, args, 3, 1);
    Py_DECREF(id);
    return status;
}

