/* The successor function of models/replication/model.py, in C: the same steps, in the same order, built
 * from the same NamedTuple types and action labels, for every combination of the model's flags.
 *
 * successors(ctx, state) returns the list ReplicationModel._successors(state) returns, or None
 * when the state is outside the sizes this code handles (the caller then runs the Python). ctx is
 * the tuple ReplicationModel._twin_context() builds: the four state types, the action tables and
 * the configuration as small ints. The Python stays the definition; tests compare the two on
 * every reachable state.
 *
 * The state's NamedTuples are read and built by the field constants of fields.h (generated from
 * models/replication/state.py), never by bare positions; the context is a plain tuple, read by
 * its own positions in read_context.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "fields.h"
#include "tuples.h"

#define MAX_REPLICAS 8
#define MAX_LOG 16
#define MAX_REQUESTS 32
#define NO_LEADER (-1)

enum { TRUNC_HW, TRUNC_LEADER_EPOCH, TRUNC_MATCHING_OFFSET, TRUNC_ON_FETCH, TRUNC_FENCED };
enum { FETCH_NONE, FETCH_LAST_FETCHED_EPOCH, FETCH_CURRENT_LEADER_EPOCH };
enum { HW_ISR_OFFSETS, HW_EPOCH_MATCH, HW_CURRENT_EPOCH };
enum { ISR_OFFSETS, ISR_EPOCH_MATCH, ISR_CURRENT_EPOCH };

/* The context, unpacked. */
typedef struct {
    PyTypeObject *state_type, *replica_type, *record_type, *request_type;
    PyObject *elect, *shrink_by_controller, *become_leader, *become_follower, *write, *inc_hw, *shrink_isr,
        *expand_isr, *fetch, *truncate;
    long log_size, max_records, max_leader_epoch;
    int truncation, fetch_fencing, hw_advance, isr_rules;
} Context;

/* A replica's log and state, read out of the state once. */
typedef struct {
    Py_ssize_t len;
    long id[MAX_LOG], epoch[MAX_LOG];
    PyObject *log;        /* the log tuple (borrowed) */
    long hw, leaderEpoch, leader;
    unsigned isr;
    PyObject *isr_obj;    /* borrowed */
} Replica;

typedef struct {
    long leaderEpoch, leader;
    unsigned isr;
    PyObject *isr_obj; /* borrowed */
} Request;

typedef struct {
    int n;
    Replica r[MAX_REPLICAS];
    PyObject *logs, *states; /* the state's tuples (borrowed) */
    PyObject *state;
    long nextRecordId, nextLeaderEpoch;
    PyObject *requests;      /* borrowed */
    int nrequests;
    Request req[MAX_REQUESTS]; /* sorted by epoch, as sorted() orders them */
    Request quorum;
} View;

static PyObject *isr_sets[1 << MAX_REPLICAS]; /* the frozenset of each replica mask, made once */

/* The frozenset of a replica mask (a new reference). */
static PyObject *isr_set(unsigned mask) {
    return tuples_mask_set(isr_sets, MAX_REPLICAS, mask);
}

/* A set of replica ids as a mask: 1 when it holds anything else. */
static int read_mask(PyObject *set, int n, unsigned *out) {
    return tuples_read_mask(set, n, MAX_REPLICAS, out);
}

static int read_request(PyObject *q, int n, Request *out) {
    if (!PyTuple_Check(q) || PyTuple_GET_SIZE(q) != LAI_SIZE) {
        return 1;
    }
    int status;
    if ((status = tuples_read_long(PyTuple_GET_ITEM(q, LAI_LEADER_EPOCH), &out->leaderEpoch)) != 0 ||
        (status = tuples_read_long(PyTuple_GET_ITEM(q, LAI_LEADER), &out->leader)) != 0) {
        return status;
    }
    out->isr_obj = PyTuple_GET_ITEM(q, LAI_ISR);
    return read_mask(out->isr_obj, n, &out->isr);
}

/* Reads the state; 1 when it is not one this code handles. */
static int read_view(PyObject *s, View *v) {
    if (!PyTuple_Check(s) || PyTuple_GET_SIZE(s) != S_SIZE) {
        return 1;
    }
    v->state = s;
    v->logs = PyTuple_GET_ITEM(s, S_REPLICA_LOG);
    v->states = PyTuple_GET_ITEM(s, S_REPLICA_STATE);
    if (!PyTuple_Check(v->logs) || !PyTuple_Check(v->states)) {
        return 1;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(v->logs);
    if (n > MAX_REPLICAS || PyTuple_GET_SIZE(v->states) != n) {
        return 1;
    }
    v->n = (int)n;
    int status;
    for (int r = 0; r < n; r++) {
        Replica *rep = &v->r[r];
        PyObject *log = PyTuple_GET_ITEM(v->logs, r);
        if (!PyTuple_Check(log) || PyTuple_GET_SIZE(log) > MAX_LOG) {
            return 1;
        }
        rep->log = log;
        rep->len = PyTuple_GET_SIZE(log);
        for (Py_ssize_t i = 0; i < rep->len; i++) {
            PyObject *record = PyTuple_GET_ITEM(log, i);
            if (!PyTuple_Check(record) || PyTuple_GET_SIZE(record) != REC_SIZE) {
                return 1;
            }
            if ((status = tuples_read_long(PyTuple_GET_ITEM(record, REC_ID), &rep->id[i])) != 0 ||
                (status = tuples_read_long(PyTuple_GET_ITEM(record, REC_EPOCH), &rep->epoch[i])) != 0) {
                return status;
            }
        }
        PyObject *st = PyTuple_GET_ITEM(v->states, r);
        if (!PyTuple_Check(st) || PyTuple_GET_SIZE(st) != RS_SIZE) {
            return 1;
        }
        if ((status = tuples_read_long(PyTuple_GET_ITEM(st, RS_HW), &rep->hw)) != 0 ||
            (status = tuples_read_long(PyTuple_GET_ITEM(st, RS_LEADER_EPOCH), &rep->leaderEpoch)) != 0 ||
            (status = tuples_read_long(PyTuple_GET_ITEM(st, RS_LEADER), &rep->leader)) != 0) {
            return status;
        }
        if (rep->leader < NO_LEADER || rep->leader >= n || rep->hw < 0) {
            return 1;
        }
        rep->isr_obj = PyTuple_GET_ITEM(st, RS_ISR);
        if ((status = read_mask(rep->isr_obj, v->n, &rep->isr)) != 0) {
            return status;
        }
    }
    if ((status = tuples_read_long(PyTuple_GET_ITEM(s, S_NEXT_RECORD_ID), &v->nextRecordId)) != 0 ||
        (status = tuples_read_long(PyTuple_GET_ITEM(s, S_NEXT_LEADER_EPOCH), &v->nextLeaderEpoch)) != 0) {
        return status;
    }
    v->requests = PyTuple_GET_ITEM(s, S_LEADER_AND_ISR_REQUESTS);
    if (!PyFrozenSet_CheckExact(v->requests)) {
        return 1;
    }
    PyObject *items[MAX_REQUESTS];
    Py_ssize_t size = tuples_set_items(v->requests, items, MAX_REQUESTS);
    if (size < 0 || size > MAX_REQUESTS) {
        return size < 0 ? -1 : 1;
    }
    v->nrequests = 0;
    for (Py_ssize_t k = 0; k < size; k++) {
        Request q;
        if ((status = read_request(items[k], v->n, &q)) != 0) {
            return status;
        }
        if (q.leader < NO_LEADER || q.leader >= n) {
            return 1;
        }
        int j = v->nrequests++;
        while (j > 0 && (v->req[j - 1].leaderEpoch > q.leaderEpoch ||
                         (v->req[j - 1].leaderEpoch == q.leaderEpoch && v->req[j - 1].leader > q.leader))) {
            v->req[j] = v->req[j - 1];
            j--;
        }
        v->req[j] = q;
    }
    for (int i = 1; i < v->nrequests; i++) {
        if (v->req[i].leaderEpoch == v->req[i - 1].leaderEpoch) {
            return 1; /* sorted() would compare the rest: leave such states to the Python */
        }
    }
    if ((status = read_request(PyTuple_GET_ITEM(s, S_QUORUM_STATE), v->n, &v->quorum)) != 0) {
        return status;
    }
    if (v->quorum.leader < NO_LEADER || v->quorum.leader >= n) {
        return 1;
    }
    return 0;
}

/* -- building values (every maker steals the references it is given, and checks them) ------------ */

static PyObject *replica_state(const Context *c, long hw, long epoch, long leader, PyObject *isr) {
    PyObject *items[RS_SIZE] = {[RS_HW] = PyLong_FromLong(hw), [RS_LEADER_EPOCH] = PyLong_FromLong(epoch),
                                [RS_LEADER] = PyLong_FromLong(leader), [RS_ISR] = isr};
    return tuples_new_named(c->replica_type, RS_SIZE, items);
}

/* A replica's state with only its hw changed. */
static PyObject *with_hw(const Context *c, const View *v, int r, long hw) {
    PyObject *old = PyTuple_GET_ITEM(v->states, r);
    PyObject *items[RS_SIZE] = {[RS_HW] = PyLong_FromLong(hw),
                                [RS_LEADER_EPOCH] = Py_NewRef(PyTuple_GET_ITEM(old, RS_LEADER_EPOCH)),
                                [RS_LEADER] = Py_NewRef(PyTuple_GET_ITEM(old, RS_LEADER)),
                                [RS_ISR] = Py_NewRef(PyTuple_GET_ITEM(old, RS_ISR))};
    return tuples_new_named(c->replica_type, RS_SIZE, items);
}

static PyObject *state6(const Context *c, PyObject *logs, PyObject *states, PyObject *nextRecordId,
                        PyObject *nextLeaderEpoch, PyObject *requests, PyObject *quorum) {
    PyObject *items[S_SIZE] = {[S_REPLICA_LOG] = logs,
                               [S_REPLICA_STATE] = states,
                               [S_NEXT_RECORD_ID] = nextRecordId,
                               [S_NEXT_LEADER_EPOCH] = nextLeaderEpoch,
                               [S_LEADER_AND_ISR_REQUESTS] = requests,
                               [S_QUORUM_STATE] = quorum};
    return tuples_new_named(c->state_type, S_SIZE, items);
}

/* The state with new logs and replica states (stolen), everything else shared. */
static PyObject *with_replicas(const Context *c, const View *v, PyObject *logs, PyObject *states) {
    PyObject *s = v->state;
    return state6(c, logs, states, Py_NewRef(PyTuple_GET_ITEM(s, S_NEXT_RECORD_ID)),
                  Py_NewRef(PyTuple_GET_ITEM(s, S_NEXT_LEADER_EPOCH)),
                  Py_NewRef(PyTuple_GET_ITEM(s, S_LEADER_AND_ISR_REQUESTS)),
                  Py_NewRef(PyTuple_GET_ITEM(s, S_QUORUM_STATE)));
}

/* table[i][j][k]: the action tables are nested lists. */
static PyObject *act1(PyObject *table, long i) { return PyList_GET_ITEM(table, i); }
static PyObject *act2(PyObject *table, long i, long j) { return PyList_GET_ITEM(PyList_GET_ITEM(table, i), j); }
static PyObject *act3(PyObject *table, long i, long j, long k) {
    return PyList_GET_ITEM(PyList_GET_ITEM(PyList_GET_ITEM(table, i), j), k);
}

/* -- the spec's operators ------------------------------------------------------------------------ */

static int caught_up(const View *v, int leader, int follower, Py_ssize_t end) {
    if (v->r[follower].leader != leader) {
        return 0;
    }
    return end == 0 || (v->r[leader].len >= end && v->r[follower].len >= end);
}

static int caught_up_to_leader_epoch(const View *v, int leader, int follower, Py_ssize_t end) {
    if (v->r[leader].leader != leader || v->r[follower].leader != leader) {
        return 0;
    }
    if (end == 0) {
        return 1;
    }
    const Replica *l = &v->r[leader], *f = &v->r[follower];
    return l->len >= end && f->len >= end && f->epoch[end - 1] == l->epoch[end - 1];
}

static int follows_leader_epoch(const View *v, int leader, int follower) {
    const Replica *l = &v->r[leader], *f = &v->r[follower];
    return l->leader == leader && f->leader == leader && f->leaderEpoch == l->leaderEpoch;
}

static int hw_reached_current_epoch(const View *v, int leader) {
    const Replica *l = &v->r[leader];
    return l->hw == l->len || (l->hw < l->len && l->epoch[l->hw] == l->leaderEpoch);
}

static Py_ssize_t first_non_matching_offset_from_tail(const Replica *leader, const Replica *r) {
    if (leader->len == 0) {
        return 0;
    }
    Py_ssize_t m = r->len < leader->len ? r->len : leader->len;
    for (Py_ssize_t offset = m - 1; offset >= 0; offset--) {
        if (r->id[offset] == leader->id[offset] && r->epoch[offset] == leader->epoch[offset]) {
            return offset + 1;
        }
    }
    return 0;
}

static long offset_for_leader_epoch(const View *v, int leader, int follower, long epoch) {
    const Replica *l = &v->r[leader];
    if (l->len == 0) {
        return v->r[follower].hw;
    }
    if (l->epoch[l->len - 1] == epoch) {
        return (long)l->len;
    }
    for (Py_ssize_t offset = 0; offset < l->len; offset++) {
        if (l->epoch[offset] > epoch) {
            return (long)offset;
        }
    }
    return v->r[follower].hw;
}

/* -- the steps ----------------------------------------------------------------------------------- */

static int controller_update(const Context *c, const View *v, PyObject *out, PyObject *action, long leader,
                             PyObject *isr) {
    if (isr == NULL) {
        return -1;
    }
    PyObject *items[LAI_SIZE] = {[LAI_LEADER_EPOCH] = PyLong_FromLong(v->nextLeaderEpoch),
                                 [LAI_LEADER] = PyLong_FromLong(leader), [LAI_ISR] = isr};
    PyObject *request = tuples_new_named(c->request_type, LAI_SIZE, items);
    if (request == NULL) {
        return -1;
    }
    PyObject *requests = PyFrozenSet_New(v->requests);
    if (requests == NULL || PySet_Add(requests, request) < 0) {
        Py_XDECREF(requests);
        Py_DECREF(request);
        return -1;
    }
    PyObject *s = v->state;
    return tuples_emit(out, action,
                state6(c, Py_NewRef(PyTuple_GET_ITEM(s, S_REPLICA_LOG)),
                       Py_NewRef(PyTuple_GET_ITEM(s, S_REPLICA_STATE)),
                       Py_NewRef(PyTuple_GET_ITEM(s, S_NEXT_RECORD_ID)),
                       PyLong_FromLong(v->nextLeaderEpoch + 1), requests, request));
}

static int controller_actions(const Context *c, const View *v, PyObject *out) {
    if (v->nextLeaderEpoch > c->max_leader_epoch) {
        return 0;
    }
    const Request *q = &v->quorum;
    for (int candidate = 0; candidate < v->n; candidate++) { /* sorted(quorum.isr) */
        if ((q->isr & (1u << candidate)) && candidate != q->leader) {
            if (controller_update(c, v, out, act1(c->elect, candidate), candidate, Py_NewRef(q->isr_obj)) < 0) {
                return -1;
            }
        }
    }
    for (int r = 0; r < v->n; r++) {
        unsigned bit = 1u << r;
        PyObject *action = act1(c->shrink_by_controller, r);
        int status;
        if (q->leader == r) {
            PyObject *isr = q->isr == bit ? Py_NewRef(q->isr_obj) : isr_set(q->isr & ~bit);
            status = controller_update(c, v, out, action, NO_LEADER, isr);
        } else if (q->isr & bit) {
            status = controller_update(c, v, out, action, q->leader, isr_set(q->isr & ~bit));
        } else {
            continue;
        }
        if (status < 0) {
            return -1;
        }
    }
    return 0;
}

static int become_leader(const Context *c, const View *v, PyObject *out) {
    for (int i = 0; i < v->nrequests; i++) {
        const Request *q = &v->req[i];
        if (q->leader == NO_LEADER || q->leaderEpoch <= v->r[q->leader].leaderEpoch) {
            continue;
        }
        PyObject *state = replica_state(c, v->r[q->leader].hw, q->leaderEpoch, q->leader, Py_NewRef(q->isr_obj));
        PyObject *action = act2(c->become_leader, q->leader, q->leaderEpoch);
        if (tuples_emit(out, action, with_replicas(c, v, Py_NewRef(v->logs), tuples_put(v->states, q->leader, state))) < 0) {
            return -1;
        }
    }
    return 0;
}

static int become_follower(const Context *c, const View *v, PyObject *out) {
    for (int i = 0; i < v->nrequests; i++) {
        const Request *q = &v->req[i];
        int leader = (int)q->leader;
        if (leader == NO_LEADER) {
            continue;
        }
        const Replica *current = &v->r[leader];
        /* KIP-320: a follower truncates only against a leader that is already in this epoch. */
        if (c->truncation == TRUNC_FENCED && (current->leader != leader || current->leaderEpoch != q->leaderEpoch)) {
            continue;
        }
        for (int r = 0; r < v->n; r++) {
            const Replica *rep = &v->r[r];
            if (r == leader || q->leaderEpoch <= rep->leaderEpoch) {
                continue;
            }
            PyObject *action = act3(c->become_follower, r, leader, q->leaderEpoch);
            if (c->truncation == TRUNC_ON_FETCH) { /* no truncation on the epoch change */
                PyObject *state = replica_state(c, rep->hw, q->leaderEpoch, leader, Py_NewRef(q->isr_obj));
                if (tuples_emit(out, action, with_replicas(c, v, Py_NewRef(v->logs), tuples_put(v->states, r, state))) < 0) {
                    return -1;
                }
                continue;
            }
            long offset;
            switch (c->truncation) {
            case TRUNC_HW:
                offset = rep->hw;
                break;
            case TRUNC_LEADER_EPOCH:
                offset = rep->len == 0 ? 0 : offset_for_leader_epoch(v, leader, r, rep->epoch[rep->len - 1]);
                break;
            default: /* fenced, matching_offset */
                offset = (long)first_non_matching_offset_from_tail(current, rep);
            }
            if (offset > rep->len) {
                continue; /* a truncation cannot extend the log */
            }
            long hw = offset < rep->hw ? offset : rep->hw;
            PyObject *state = replica_state(c, hw, q->leaderEpoch, leader, Py_NewRef(q->isr_obj));
            PyObject *logs = offset == rep->len ? Py_NewRef(v->logs)
                                                : tuples_put(v->logs, r, PyTuple_GetSlice(rep->log, 0, offset));
            if (tuples_emit(out, action, with_replicas(c, v, logs, tuples_put(v->states, r, state))) < 0) {
                return -1;
            }
        }
    }
    return 0;
}

static int leader_write(const Context *c, const View *v, PyObject *out) {
    if (v->nextRecordId > c->max_records - 1) {
        return 0;
    }
    PyObject *s = v->state;
    for (int r = 0; r < v->n; r++) {
        const Replica *rep = &v->r[r];
        if (rep->leader != r || rep->len >= c->log_size) {
            continue;
        }
        PyObject *items[REC_SIZE] = {[REC_ID] = PyLong_FromLong(v->nextRecordId),
                                     [REC_EPOCH] = PyLong_FromLong(rep->leaderEpoch)};
        PyObject *record = tuples_new_named(c->record_type, REC_SIZE, items);
        PyObject *logs = tuples_put(v->logs, r, tuples_append(rep->log, record));
        PyObject *next = state6(c, logs, Py_NewRef(v->states), PyLong_FromLong(v->nextRecordId + 1),
                                Py_NewRef(PyTuple_GET_ITEM(s, S_NEXT_LEADER_EPOCH)),
                                Py_NewRef(PyTuple_GET_ITEM(s, S_LEADER_AND_ISR_REQUESTS)),
                                Py_NewRef(PyTuple_GET_ITEM(s, S_QUORUM_STATE)));
        if (tuples_emit(out, act2(c->write, r, v->nextRecordId), next) < 0) {
            return -1;
        }
    }
    return 0;
}

static int leader_inc_high_watermark(const Context *c, const View *v, PyObject *out) {
    for (int leader = 0; leader < v->n; leader++) {
        const Replica *l = &v->r[leader];
        long hw = l->hw;
        int presumes = l->leader == leader;
        /* Every rule needs the replica to presume leadership, except that the KIP-320 rule checks it
         * only through its ISR members: with an empty ISR it asks nothing of them. */
        if (!presumes && (l->isr || c->hw_advance != HW_CURRENT_EPOCH || l->len <= hw)) {
            continue;
        }
        int ok = c->hw_advance == HW_CURRENT_EPOCH ? l->len > hw
                 : c->hw_advance == HW_EPOCH_MATCH ? presumes && l->len > hw
                                                   : presumes && hw < c->log_size;
        for (int f = 0; ok && f < v->n; f++) {
            if (!(l->isr & (1u << f))) {
                continue;
            }
            if (c->hw_advance == HW_ISR_OFFSETS) {
                ok = v->r[f].leader == leader && v->r[f].len > hw;
            } else if (c->hw_advance == HW_EPOCH_MATCH) {
                ok = caught_up_to_leader_epoch(v, leader, f, hw + 1);
            } else {
                ok = follows_leader_epoch(v, leader, f) && v->r[f].len > hw;
            }
        }
        if (ok) {
            PyObject *states = tuples_put(v->states, leader, with_hw(c, v, leader, hw + 1));
            if (tuples_emit(out, act1(c->inc_hw, leader), with_replicas(c, v, Py_NewRef(v->logs), states)) < 0) {
                return -1;
            }
        }
    }
    return 0;
}

/* The leader's conditional ISR write to ZooKeeper (epoch unchanged, no LeaderAndIsr sent). */
static int quorum_update(const Context *c, const View *v, PyObject *out, PyObject *action, int leader,
                         unsigned isr_mask) {
    PyObject *isr = isr_set(isr_mask);
    if (isr == NULL) {
        return -1;
    }
    const Replica *l = &v->r[leader];
    Py_INCREF(isr);
    PyObject *state = replica_state(c, l->hw, l->leaderEpoch, l->leader, isr);
    PyObject *items[LAI_SIZE] = {[LAI_LEADER_EPOCH] = PyLong_FromLong(v->quorum.leaderEpoch),
                                 [LAI_LEADER] = PyLong_FromLong(v->quorum.leader), [LAI_ISR] = isr};
    PyObject *quorum = tuples_new_named(c->request_type, LAI_SIZE, items);
    PyObject *s = v->state;
    return tuples_emit(out, action,
                state6(c, Py_NewRef(v->logs), tuples_put(v->states, leader, state),
                       Py_NewRef(PyTuple_GET_ITEM(s, S_NEXT_RECORD_ID)),
                       Py_NewRef(PyTuple_GET_ITEM(s, S_NEXT_LEADER_EPOCH)),
                       Py_NewRef(PyTuple_GET_ITEM(s, S_LEADER_AND_ISR_REQUESTS)), quorum));
}

static int leader_isr_changes(const Context *c, const View *v, PyObject *out) {
    int leader = (int)v->quorum.leader;
    if (leader == NO_LEADER) {
        return 0;
    }
    const Replica *l = &v->r[leader];
    if (l->leader != leader || l->leaderEpoch != v->quorum.leaderEpoch) {
        return 0;
    }
    unsigned isr = l->isr;
    for (int r = 0; r < v->n; r++) {
        if (r == leader || !(isr & (1u << r))) {
            continue;
        }
        int lagging;
        if (c->isr_rules == ISR_OFFSETS) {
            lagging = !caught_up(v, leader, r, l->len);
        } else if (c->isr_rules == ISR_EPOCH_MATCH) {
            lagging = !caught_up_to_leader_epoch(v, leader, r, l->len);
        } else {
            lagging = !follows_leader_epoch(v, leader, r) || v->r[r].len < l->len;
        }
        if (lagging && quorum_update(c, v, out, act2(c->shrink_isr, leader, r), leader, isr & ~(1u << r)) < 0) {
            return -1;
        }
    }
    long hw = l->hw;
    for (int r = 0; r < v->n; r++) {
        if (isr & (1u << r)) {
            continue;
        }
        int eligible;
        if (c->isr_rules == ISR_OFFSETS) {
            eligible = caught_up(v, leader, r, hw);
        } else if (c->isr_rules == ISR_EPOCH_MATCH) {
            eligible = caught_up_to_leader_epoch(v, leader, r, hw) && hw_reached_current_epoch(v, leader);
        } else {
            eligible = follows_leader_epoch(v, leader, r) && (hw == 0 || v->r[r].len >= hw) &&
                       hw_reached_current_epoch(v, leader);
        }
        if (eligible && quorum_update(c, v, out, act2(c->expand_isr, leader, r), leader, isr | (1u << r)) < 0) {
            return -1;
        }
    }
    return 0;
}

static int follower_fetch(const Context *c, const View *v, PyObject *out) {
    for (int f = 0; f < v->n; f++) {
        const Replica *fr = &v->r[f];
        int leader = (int)fr->leader;
        if (leader == NO_LEADER || leader == f) {
            continue;
        }
        const Replica *l = &v->r[leader];
        if (l->leader != leader) {
            continue;
        }
        Py_ssize_t end = fr->len;
        if (end >= l->len) {
            continue;
        }
        if (c->fetch_fencing == FETCH_LAST_FETCHED_EPOCH) {
            if (end > 0 && fr->epoch[end - 1] != l->epoch[end - 1]) {
                continue;
            }
        } else if (c->fetch_fencing == FETCH_CURRENT_LEADER_EPOCH && fr->leaderEpoch != l->leaderEpoch) {
            continue;
        }
        long hw = l->hw < end + 1 ? l->hw : (long)end + 1;
        PyObject *logs = tuples_put(v->logs, f, tuples_append(fr->log, Py_NewRef(PyTuple_GET_ITEM(l->log, end))));
        PyObject *states = tuples_put(v->states, f, with_hw(c, v, f, hw));
        if (tuples_emit(out, act2(c->fetch, f, leader), with_replicas(c, v, logs, states)) < 0) {
            return -1;
        }
    }
    return 0;
}

/* The first KIP-320 draft: truncate when a fetch finds the follower's log diverged. */
static int follower_truncate(const Context *c, const View *v, PyObject *out) {
    for (int f = 0; f < v->n; f++) {
        const Replica *fr = &v->r[f];
        int leader = (int)fr->leader;
        if (leader == NO_LEADER || leader == f || v->r[leader].leader != leader) {
            continue;
        }
        const Replica *l = &v->r[leader];
        int diverged = fr->len > l->len || (fr->len > 0 && l->len >= fr->len &&
                                             l->epoch[fr->len - 1] != fr->epoch[fr->len - 1]);
        if (!diverged) {
            continue;
        }
        Py_ssize_t offset = first_non_matching_offset_from_tail(l, fr);
        PyObject *logs = tuples_put(v->logs, f, PyTuple_GetSlice(fr->log, 0, offset));
        PyObject *states = tuples_put(v->states, f, with_hw(c, v, f, offset < fr->hw ? (long)offset : fr->hw));
        if (tuples_emit(out, act2(c->truncate, f, leader), with_replicas(c, v, logs, states)) < 0) {
            return -1;
        }
    }
    return 0;
}

static int read_context(PyObject *ctx, Context *c) {
    if (!PyTuple_Check(ctx) || PyTuple_GET_SIZE(ctx) != 21) {
        PyErr_SetString(PyExc_TypeError, "successors(ctx, state): ctx is not ReplicationModel's context");
        return -1;
    }
    PyTypeObject **types[4] = {&c->state_type, &c->replica_type, &c->record_type, &c->request_type};
    for (int i = 0; i < 4; i++) {
        PyObject *t = PyTuple_GET_ITEM(ctx, i);
        if (!PyType_Check(t) || !PyType_IsSubtype((PyTypeObject *)t, &PyTuple_Type)) {
            PyErr_SetString(PyExc_TypeError, "successors(ctx, state): the context's types must be tuple types");
            return -1;
        }
        *types[i] = (PyTypeObject *)t;
    }
    PyObject **tables[10] = {&c->elect,  &c->shrink_by_controller, &c->become_leader, &c->become_follower,
                             &c->write,  &c->inc_hw,               &c->shrink_isr,    &c->expand_isr,
                             &c->fetch,  &c->truncate};
    for (int i = 0; i < 10; i++) {
        *tables[i] = PyTuple_GET_ITEM(ctx, 4 + i);
        if (!PyList_Check(*tables[i])) {
            PyErr_SetString(PyExc_TypeError, "successors(ctx, state): the action tables must be lists");
            return -1;
        }
    }
    long ints[7];
    for (int i = 0; i < 7; i++) {
        ints[i] = PyLong_AsLong(PyTuple_GET_ITEM(ctx, 14 + i));
        if (ints[i] == -1 && PyErr_Occurred()) {
            return -1;
        }
    }
    c->log_size = ints[0];
    c->max_records = ints[1];
    c->max_leader_epoch = ints[2];
    c->truncation = (int)ints[3];
    c->fetch_fencing = (int)ints[4];
    c->hw_advance = (int)ints[5];
    c->isr_rules = (int)ints[6];
    return 0;
}

/* Whether every action a state can take is in the tables (their sizes come from the config). */
static int within_tables(const Context *c, const View *v) {
    Py_ssize_t n = v->n;
    if (PyList_GET_SIZE(c->elect) != n || PyList_GET_SIZE(c->write) != n) {
        return 0;
    }
    if (v->nextRecordId < 0 || (v->nextRecordId <= c->max_records - 1 &&
                                v->nextRecordId >= PyList_GET_SIZE(PyList_GET_ITEM(c->write, 0)))) {
        return 0;
    }
    Py_ssize_t epochs = PyList_GET_SIZE(PyList_GET_ITEM(c->become_leader, 0));
    for (int i = 0; i < v->nrequests; i++) {
        if (v->req[i].leaderEpoch < 0 || v->req[i].leaderEpoch >= epochs) {
            return 0;
        }
    }
    return 1;
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
    int status = read_view(args[1], &v);
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
    if (controller_actions(&c, &v, out) < 0 || become_leader(&c, &v, out) < 0 || become_follower(&c, &v, out) < 0 ||
        leader_write(&c, &v, out) < 0 || leader_inc_high_watermark(&c, &v, out) < 0 ||
        leader_isr_changes(&c, &v, out) < 0 || follower_fetch(&c, &v, out) < 0 ||
        (c.truncation == TRUNC_ON_FETCH && follower_truncate(&c, &v, out) < 0)) {
        Py_DECREF(out);
        return NULL;
    }
    return out;
}

static PyMethodDef methods[] = {
    {"successors", (PyCFunction)(void (*)(void))successors, METH_FASTCALL,
     "successors(ctx, state) -> list of (action, state), or None for a state left to the Python."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_successors", "The replication model's successor function, in C.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__successors(void) { return PyModule_Create(&module); }
