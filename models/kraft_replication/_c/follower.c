/* The kraft-replication C successors: the followers' steps (_send_fetch, _handle_fetch_response) and
 * where a follower truncates. */
#include "kraft_replication.h"

static long last_epoch(const Rep *r) { return r->len ? r->epoch[r->len - 1] : UNDEFINED; }

/* truncation_offset: where a follower truncates given the leader's (epoch, endOffset). */
static long truncation_offset(const Rep *f, long epoch, long end, int *done) {
    long len = (long)f->len;
    *done = 1;
    if (end == UNDEFINED) {
        return f->hw < len ? f->hw : len;
    }
    long own_epoch, own_end;
    kr_end_offset_for_epoch(f->len, f->epoch, epoch, last_epoch(f), &own_epoch, &own_end);
    if (own_epoch == UNDEFINED) {
        return end < len ? end : len;
    }
    if (own_epoch != epoch) {
        *done = 0;
        return own_end < len ? own_end : len;
    }
    return end < own_end ? end : own_end;
}

/* -- followers ------------------------------------------------------------------------------------ */

int kr_send_fetch(const Context *c, const View *v, int f, PyObject *out) {
    const Rep *r = &v->r[f];
    int leader_id = (int)r->leader;
    if (leader_id == NO_LEADER || v->m[f].kind != MSG_NONE || !v->r[leader_id].running) {
        return 0;
    }
    if (r->truncating) {
        PyObject *items[OREQ_SIZE] = {[OREQ_LEADER] = num(leader_id),
                                      [OREQ_CURRENT_LEADER_EPOCH] = num(r->leaderEpoch),
                                      [OREQ_LEADER_EPOCH] = num(last_epoch(r))};
        PyObject *ask = tuples_new_named(c->ofle_request_type, OREQ_SIZE, items);
        return tuples_emit(out, act2(c, A_SEND_OFLE, f, leader_id), kr_with_fetch(c, v, f, ask));
    }
    PyObject *items[FREQ_SIZE] = {[FREQ_LEADER] = num(leader_id),
                                  [FREQ_FETCH_OFFSET] = PyLong_FromSsize_t(r->len),
                                  [FREQ_LAST_FETCHED_EPOCH] = num(last_epoch(r)),
                                  [FREQ_CURRENT_LEADER_EPOCH] = num(r->leaderEpoch),
                                  [FREQ_REPLICA_EPOCH] = Py_NewRef(PyTuple_GET_ITEM(r->obj, R_BROKER_EPOCH))};
    PyObject *request = tuples_new_named(c->fetch_request_type, FREQ_SIZE, items);
    return tuples_emit(out, act2(c, A_SEND_FETCH, f, leader_id), kr_with_fetch(c, v, f, request));
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

int kr_handle_fetch_response(const Context *c, const View *v, int f, PyObject *out) {
    PyObject *response = v->m[f].obj;
    if (PyTuple_GET_SIZE(response) != FRESP_SIZE) {
        return 1;
    }
    const Rep *r = &v->r[f];
    long leader = v->m[f].leader, leaderEpoch, fetchOffset;
    int status;
    if ((status = tuples_read_long(PyTuple_GET_ITEM(response, FRESP_LEADER_EPOCH), &leaderEpoch)) != 0 ||
        (status = tuples_read_long(PyTuple_GET_ITEM(response, FRESP_FETCH_OFFSET), &fetchOffset)) != 0) {
        return status;
    }
    int error = read_error(c, PyTuple_GET_ITEM(response, FRESP_ERROR));
    if (error < 0) {
        return 1;
    }
    PyObject *action = act2(c, A_HANDLE_FETCH_RESPONSE, f, leader);
    int current = r->leader == leader && r->leaderEpoch == leaderEpoch && (long)r->len == fetchOffset;
    if (!current || error == ERR_NOT_LEADER_OR_FOLLOWER || error == ERR_FENCED_LEADER_EPOCH ||
        error == ERR_UNKNOWN_LEADER_EPOCH) {
        return tuples_emit(out, action, kr_with_fetch(c, v, f, Py_NewRef(Py_None)));
    }
    PyObject *log;
    long hw;
    if (error == ERR_NONE) {
        PyObject *records = PyTuple_GET_ITEM(response, FRESP_RECORDS);
        long response_hw;
        if (!PyTuple_CheckExact(records)) {
            return 1;
        }
        if ((status = tuples_read_long(PyTuple_GET_ITEM(response, FRESP_HIGH_WATERMARK), &response_hw)) != 0) {
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
            long epoch, end;
            int done;
            if ((status = read_pair(PyTuple_GET_ITEM(response, FRESP_DIVERGING_EPOCH), &epoch, &end)) != 0) {
                return status;
            }
            offset = truncation_offset(r, epoch, end, &done);
        } else {
            long leo;
            if ((status = tuples_read_long(PyTuple_GET_ITEM(response, FRESP_LOG_END_OFFSET), &leo)) != 0) {
                return status;
            }
            offset = leo < (long)r->len ? leo : (long)r->len;
        }
        log = kr_head(r->log, offset);
        if (log == NULL) {
            return -1;
        }
        hw = r->hw < PyTuple_GET_SIZE(log) ? r->hw : (long)PyTuple_GET_SIZE(log);
    }
    int fields[2] = {R_LOG, R_HIGH_WATERMARK};
    PyObject *values[2] = {log, num(hw)};
    PyObject *updated = kr_replica_with(c, r, 2, fields, values);
    PyObject *items[S_SIZE];
    load(v->state, items, S_SIZE);
    set(items, S_FETCHES, tuples_put(v->fetches, f, Py_NewRef(Py_None)));
    return tuples_emit(out, action, kr_update(c, v, f, updated, items));
}

