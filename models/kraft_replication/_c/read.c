/* The kraft-replication C successors: a state's tuples read into the View, once per state. Each reader
 * returns -1 and an exception, 0, or 1 for a value this code does not handle (the Python then runs). */
#include "kraft_replication.h"

/* A frozenset of broker ids as a mask. */
int kr_read_mask(PyObject *set, int n, unsigned *out) {
    return tuples_read_mask(set, n, MAX_BROKERS, out);
}

static int read_log(PyObject *log, const Context *c, Py_ssize_t *len, long *id, long *epoch) {
    if (!PyTuple_CheckExact(log) || PyTuple_GET_SIZE(log) > MAX_LOG) {
        return 1;
    }
    *len = PyTuple_GET_SIZE(log);
    int status;
    for (Py_ssize_t i = 0; i < *len; i++) {
        PyObject *record = PyTuple_GET_ITEM(log, i);
        if (!is_tuple(record, c->record_type, REC_SIZE)) {
            return 1;
        }
        if ((status = tuples_read_long(PyTuple_GET_ITEM(record, REC_ID), &id[i])) != 0 ||
            (status = tuples_read_long(PyTuple_GET_ITEM(record, REC_EPOCH), &epoch[i])) != 0) {
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
    if ((status = tuples_read_bool(PyTuple_GET_ITEM(obj, R_RUNNING), &r->running)) != 0 ||
        (status = tuples_read_bool(PyTuple_GET_ITEM(obj, R_HOSTED), &r->hosted)) != 0 ||
        (status = tuples_read_long(PyTuple_GET_ITEM(obj, R_BROKER_EPOCH), &r->brokerEpoch)) != 0 ||
        (status = tuples_read_long(PyTuple_GET_ITEM(obj, R_HIGH_WATERMARK), &r->hw)) != 0 ||
        (status = tuples_read_long(PyTuple_GET_ITEM(obj, R_LEADER), &r->leader)) != 0 ||
        (status = tuples_read_long(PyTuple_GET_ITEM(obj, R_LEADER_EPOCH), &r->leaderEpoch)) != 0 ||
        (status = tuples_read_long(PyTuple_GET_ITEM(obj, R_PARTITION_EPOCH), &r->partitionEpoch)) != 0) {
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
    if ((status = kr_read_mask(r->isr_obj, n, &r->isr)) != 0) {
        return status;
    }
    PyObject *pending = PyTuple_GET_ITEM(obj, R_PENDING_ALTER_PARTITION);
    r->has_pending = pending != Py_None;
    if (r->has_pending) {
        if (!is_tuple(pending, c->alter_partition_type, AP_SIZE)) {
            return 1;
        }
        if ((status = kr_read_mask(PyTuple_GET_ITEM(pending, AP_ISR), n, &r->pending_isr)) != 0 ||
            (status = tuples_read_long(PyTuple_GET_ITEM(pending, AP_SENT_TO), &r->pending_sentTo)) != 0) {
            return status;
        }
    }
    PyObject *fs = PyTuple_GET_ITEM(obj, R_FOLLOWER_STATE);
    if (!PyTuple_Check(fs) || PyTuple_GET_SIZE(fs) != n) {
        return 1;
    }
    for (int i = 0; i < n; i++) {
        if ((status = read_pair(PyTuple_GET_ITEM(fs, i), &r->fs_leo[i], &r->fs_epoch[i])) != 0) {
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
        if ((status = tuples_read_long(PyTuple_GET_ITEM(assignment, i), &b)) != 0) {
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
    if ((status = tuples_read_long(PyTuple_GET_ITEM(obj, C_LEADER), &v->c_leader)) != 0 ||
        (status = tuples_read_long(PyTuple_GET_ITEM(obj, C_LEADER_EPOCH), &v->c_leaderEpoch)) != 0 ||
        (status = tuples_read_long(PyTuple_GET_ITEM(obj, C_PARTITION_EPOCH), &v->c_partitionEpoch)) != 0 ||
        (status = kr_read_mask(PyTuple_GET_ITEM(obj, C_FENCED), n, &v->c_fenced)) != 0 ||
        (status = kr_read_mask(PyTuple_GET_ITEM(obj, C_ISR), n, &v->c_isr)) != 0) {
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
        if ((status = tuples_read_long(PyTuple_GET_ITEM(epochs, b), &v->c_brokerEpochs[b])) != 0) {
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
        if ((status = tuples_read_long(PyTuple_GET_ITEM(replicas, i), &b)) != 0) {
            return status;
        }
        if (b < 0 || b >= n) {
            return 1;
        }
        v->c_replicas |= 1u << b;
    }
    return 0;
}

/* Where each kind of message names the leader it is sent to or answered by. */
static const int leader_field[] = {[MSG_FETCH_REQUEST] = FREQ_LEADER, [MSG_FETCH_RESPONSE] = FRESP_LEADER,
                                   [MSG_OFLE_REQUEST] = OREQ_LEADER, [MSG_OFLE_RESPONSE] = ORESP_LEADER};

int kr_read_view(const Context *c, PyObject *s, View *v) {
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
        if ((status = tuples_read_long(PyTuple_GET_ITEM(s, fields[i]), counters[i])) != 0) {
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
        if (m->kind < 0 || PyTuple_GET_SIZE(m->obj) <= leader_field[m->kind]) {
            return 1;
        }
        if ((status = tuples_read_long(PyTuple_GET_ITEM(m->obj, leader_field[m->kind]), &m->leader)) != 0) {
            return status;
        }
        if (m->leader < 0 || m->leader >= n) {
            return 1;
        }
    }
    return 0;
}

/* Whether every action a state can take is in the tables (their sizes come from the config). */
int kr_within_tables(const Context *c, const View *v) {
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
