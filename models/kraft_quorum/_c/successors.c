/* The successor function of models/kraft_quorum/model.py, in C: the same steps, in the same order, built
 * from the same NamedTuple types and action labels, for every combination of the model's flags --
 * KIP-853's too: a replica's voter set is the last VotersRecord in its log (else the bootstrap set),
 * read once per state into a table of voter sets (Sets) that a new VotersRecord joins for its step.
 *
 * successors(ctx, state) returns the list KraftQuorumModel._successors(state) returns, or None when
 * the state is outside what this code handles (the caller then runs the Python). ctx is the tuple
 * KraftQuorumModel._twin_context() builds: the state types, the role and record-kind strings, the
 * action tables and the configuration as small ints. The Python stays the definition; tests compare
 * the two on every reachable state.
 *
 * This file is the top of the twin: the module and its context, the election (the timers, a vote
 * request and its response, making a Candidate and a Leader), the other steps in _successors' order
 * (ClientWrite, check-quorum, BeginQuorumEpoch, FetchTimeout) and the faults. It calls the files
 * below it: voters.c (KIP-853's steps), replica.c (a replica's shared transitions, Fetch among
 * them), state.c (the view, its queries, the new tuples).
 */
#include "kraft_quorum.h"

/* -- the election: _timed_out, _tally, _candidate, _leader --------------------------------------- */

static int popcount(unsigned mask) {
    int k = 0;
    for (; mask; mask &= mask - 1) {
        k++;
    }
    return k;
}

static void become_leader(const Context *c, const View *v, int w, Val *x) {
    kq_set_log(x, x->log == NULL ? NULL : kq_append_record(c, x->log, x->epoch, c->leader_change));
    x->rvs[x->len] = NULL;
    x->rec[x->len++] = x->epoch;
    x->role = LEADER;
    x->leaderId = w;
    kq_set_votes(x, 0);
    Py_CLEAR(x->offs_obj);
    x->noff = (int)c->n;
    for (int r = 0; r < x->noff; r++) {
        x->off[r] = r == w ? (long)x->len : 0;
    }
    x->hasFetched = 0;
    x->hwKnown = 0;
    kq_advance_hw(c, v, x);
}

static void become_candidate(const Context *c, const View *v, int w, Val *x);

/* _tally: a majority of pre-votes makes a Candidate, a majority of votes a Leader. */
static void tally(const Context *c, const View *v, int w, Val *x) {
    if (popcount(x->votes) < kq_majority_of(c, v, x)) {
        return;
    }
    if (x->role == PROSPECTIVE) {
        become_candidate(c, v, w, x);
    } else if (x->role == CANDIDATE) {
        become_leader(c, v, w, x);
    }
}

static void become_candidate(const Context *c, const View *v, int w, Val *x) {
    kq_transition(x, CANDIDATE, x->epoch + 1, NONE);
    x->votedId = w;
    kq_set_votes(x, 1u << w);
    tally(c, v, w, x);
}

/* _timed_out: the election (or fetch) timer fired. */
static void timed_out(const Context *c, const View *v, int w, Val *x) {
    x->orig = NULL;
    if (x->role != PROSPECTIVE) {
        if (!c->pre_vote) {
            become_candidate(c, v, w, x);
            return;
        }
        x->role = PROSPECTIVE;
        if (x->leaderId == w) {
            x->leaderId = NONE;
        }
        kq_set_votes(x, 1u << w);
        x->hasFetched = 0;
        tally(c, v, w, x);
    } else if (x->leaderId != NONE) {
        kq_transition(x, FOLLOWER, x->epoch, x->leaderId);
    } else {
        x->role = UNATTACHED;
        kq_set_votes(x, 0);
    }
}

/* -- the steps ----------------------------------------------------------------------------------- */

static int client_write(const Context *c, const View *v, PyObject *out, int l) {
    if (v->counters[S_WRITES] >= c->max_records) {
        return 0;
    }
    Val x;
    kq_val_copy(&x, &v->v[l]);
    kq_set_log(&x, kq_append_record(c, x.log, x.epoch, c->data));
    x.rvs[x.len] = NULL;
    x.rec[x.len++] = x.epoch;
    kq_set_offset(&x, l, (long)x.len);
    kq_advance_hw(c, v, &x);
    return kq_emit1(c, v, out, act1(c->client_write, l), l, &x, S_WRITES, 1);
}

/* quorum_lost: fewer than a majority of the voter set can still fetch from the leader. */
static int quorum_lost(const Context *c, const View *v, int l) {
    const Val *leader = &v->v[l];
    int fetching = 0;
    if (c->is_static) {
        for (int w = 0; w < c->n_voters; w++) {
            fetching += w != l && v->v[w].epoch <= leader->epoch && connected(v->isolated, l, w);
        }
        return fetching + 1 < c->majority;
    }
    const VSet *vs = kq_voters_of(c, v, leader);
    for (int k = 0; k < vs->k; k++) {
        int w = (int)vs->id[k];
        fetching += w != l && v->v[w].directoryId == vs->dir[k] && connected(v->isolated, l, w) &&
                    v->v[w].epoch <= leader->epoch;
    }
    int own = kq_holds_key(vs, l, leader->directoryId);
    return fetching + own < vs->k / 2 + 1;
}

static int check_quorum(const Context *c, const View *v, PyObject *out, int l) {
    if (!c->check_quorum) {
        return 0;
    }
    int lone = kq_voters_of(c, v, &v->v[l])->k == 1;
    if (lone && c->single_voter_exemption) {
        return 0;
    }
    if (!lone && !quorum_lost(c, v, l)) {
        return 0;
    }
    return kq_resign(c, v, out, act1(c->check_quorum_resign, l), l);
}

static int begin_quorum_epoch(const Context *c, const View *v, PyObject *out, int l) {
    const Val *leader = &v->v[l];
    unsigned ids = kq_voters_of(c, v, leader)->ids;
    for (int w = 0; w < v->n; w++) {
        const Val *me = &v->v[w];
        if (!(ids & (1u << w)) || w == l || me->epoch > leader->epoch || !connected(v->isolated, l, w)) {
            continue;
        }
        if (me->role == FOLLOWER && me->leaderId == l && me->epoch == leader->epoch) {
            continue;
        }
        Val x;
        kq_val_copy(&x, me);
        kq_transition(&x, FOLLOWER, leader->epoch, l);
        if (kq_emit1(c, v, out, act2(c->begin_quorum_epoch, l, w), w, &x, NO_COUNTER, 0) < 0) {
            return -1;
        }
    }
    return 0;
}

static int fetch_timeout(const Context *c, const View *v, PyObject *out, int f) {
    const Val *me = &v->v[f];
    const Val *leader = &v->v[me->leaderId];
    if (leader->role == LEADER && leader->epoch == me->epoch && connected(v->isolated, f, (int)me->leaderId)) {
        return 0;
    }
    Val x;
    kq_val_copy(&x, me);
    timed_out(c, v, f, &x);
    return kq_emit1(c, v, out, act1(c->fetch_timeout, f), f, &x, NO_COUNTER, 0);
}

static int election_timeout(const Context *c, const View *v, PyObject *out, int w) {
    Val x;
    kq_val_copy(&x, &v->v[w]);
    timed_out(c, v, w, &x);
    return kq_emit1(c, v, out, act1(c->election_timeout, w), w, &x, NO_COUNTER, 0);
}

/* A Vote request (a pre-vote from a Prospective) from ``cand`` to ``w`` and its response: 1 when
 * it changes something (x and y then hold the voter and the candidate), else 0. */
static int vote_round(const Context *c, const View *v, int ci, int w, Val *x, Val *y) {
    const Val *cand = &v->v[ci], *me = &v->v[w];
    int pre_vote = cand->role == PROSPECTIVE, granted = 0;
    kq_val_copy(x, me);
    if (cand->epoch >= me->epoch) {
        int log_ok = kq_last_cmp(cand, me) >= 0;
        if (cand->epoch > me->epoch) {
            kq_transition(x, UNATTACHED, cand->epoch, NONE);
        }
        const VSet *vs = c->is_static || !c->directory_ids ? NULL : kq_voters_of(c, v, cand);
        if (vs != NULL && (vs->ids & (1u << w)) && !kq_holds_key(vs, w, x->directoryId)) {
            granted = 0; /* INVALID_VOTER_KEY */
        } else if (pre_vote) {
            granted = x->role != LEADER &&
                      !(x->role == FOLLOWER && (x->hasFetched || !c->prevote_from_unfetched_follower)) && log_ok;
        } else if (x->role != UNATTACHED && x->role != PROSPECTIVE) {
            granted = 0;
        } else if (x->leaderId != NONE) {
            granted = 0;
        } else if (x->votedId != NONE) {
            granted = x->votedId == ci;
        } else if (log_ok) {
            x->votedId = ci;
            x->orig = NULL;
            granted = 1;
        }
    }
    kq_val_copy(y, cand);
    if (!kq_learn(ci, y, x->epoch, x->leaderId)) {
        if (!granted) {
            if (x->orig != NULL) {
                kq_val_clear(x);
                kq_val_clear(y);
                return 0;
            }
            return 1;
        }
        kq_set_votes(y, y->votes | (1u << w));
        tally(c, v, ci, y);
    }
    return 1;
}

/* Whether any request was sent; -1 on error. */
static int request_votes(const Context *c, const View *v, PyObject *out, int ci) {
    const Val *cand = &v->v[ci];
    int pre_vote = cand->role == PROSPECTIVE, sent = 0;
    unsigned ids = kq_voters_of(c, v, cand)->ids;
    for (int w = 0; w < v->n; w++) {
        if (!(ids & (1u << w)) || (cand->votes & (1u << w)) || w == ci || !connected(v->isolated, ci, w)) {
            continue;
        }
        Val x, y;
        if (!vote_round(c, v, ci, w, &x, &y)) {
            continue;
        }
        Change changes[2] = {{w, &x}, {ci, &y}};
        PyObject *next = kq_next_state(c, v, changes, 2, NO_COUNTER, 0);
        int status = tuples_emit(out, act3(c->request_vote, ci, w, pre_vote), next);
        kq_val_clear(&x);
        kq_val_clear(&y);
        if (status < 0) {
            return -1;
        }
        sent = 1;
    }
    return sent;
}

/* -- faults -------------------------------------------------------------------------------------- */

static int faults(const Context *c, const View *v, PyObject *out, int w) {
    int status = 0;
    unsigned bit = 1u << w;
    if (v->isolated & bit) {
        status = tuples_emit(out, act1(c->heal, w), kq_with_isolated(c, v, v->isolated & ~bit, 0));
    } else if (v->counters[S_PARTITIONS] < c->max_partitions && v->n > 1) {
        status = tuples_emit(out, act1(c->isolate, w), kq_with_isolated(c, v, v->isolated | bit, 1));
    }
    if (status < 0) {
        return -1;
    }
    if (v->counters[S_RESTARTS] < c->max_restarts) { /* _restarted: from the durable quorum-state */
        Val x;
        kq_val_copy(&x, &v->v[w]);
        int role = (x.role == LEADER || x.role == RESIGNED) && x.leaderId == w ? RESIGNED
                   : x.leaderId != NONE                                       ? FOLLOWER
                                                                              : UNATTACHED;
        long votedId = x.votedId;
        kq_transition(&x, role, x.epoch, x.leaderId);
        x.votedId = votedId;
        x.hw = 0;
        if (kq_emit1(c, v, out, act1(c->restart, w), w, &x, S_RESTARTS, 1) < 0) {
            return -1;
        }
    }
    if (v->counters[S_DISK_LOSSES] < c->max_disk_losses) { /* _lose_disk: an empty log directory */
        Val x;
        kq_val_copy(&x, &v->v[w]);
        kq_transition(&x, UNATTACHED, 0, NONE);
        kq_set_log(&x, PyTuple_New(0));
        x.len = 0;
        x.hw = 0;
        if (c->directory_ids) {
            x.directoryId++;
            Py_SETREF(x.dir_obj, PyLong_FromLong(x.directoryId));
            if (x.dir_obj == NULL) {
                kq_val_clear(&x);
                return -1;
            }
        }
        return kq_emit1(c, v, out, act1(c->lose_disk, w), w, &x, S_DISK_LOSSES, 1);
    }
    return 0;
}

/* -- the module ---------------------------------------------------------------------------------- */

enum { CTX_TYPES = 0, CTX_ROLES = 5, CTX_STRINGS = 6, CTX_TABLES = 10, CTX_INTS = 24, CTX_SIZE = 40 };

static int read_context(PyObject *ctx, Context *c) {
    if (!PyTuple_Check(ctx) || PyTuple_GET_SIZE(ctx) != CTX_SIZE) {
        PyErr_SetString(PyExc_TypeError, "successors(ctx, state): ctx is not KraftQuorumModel's context");
        return -1;
    }
    PyTypeObject **types[5] = {&c->state_type, &c->voter_type, &c->record_type, &c->committed_type,
                               &c->voters_record_type};
    for (int i = 0; i < 5; i++) {
        PyObject *t = PyTuple_GET_ITEM(ctx, CTX_TYPES + i);
        if (!PyType_Check(t) || !PyType_IsSubtype((PyTypeObject *)t, &PyTuple_Type)) {
            PyErr_SetString(PyExc_TypeError, "successors(ctx, state): the context's types must be tuple types");
            return -1;
        }
        *types[i] = (PyTypeObject *)t;
    }
    PyObject *roles = PyTuple_GET_ITEM(ctx, CTX_ROLES);
    if (!PyTuple_Check(roles) || PyTuple_GET_SIZE(roles) != ROLE_COUNT) {
        PyErr_SetString(PyExc_TypeError, "successors(ctx, state): the context's roles must be a tuple of six");
        return -1;
    }
    for (int i = 0; i < ROLE_COUNT; i++) {
        c->roles[i] = PyTuple_GET_ITEM(roles, i);
    }
    c->leader_change = PyTuple_GET_ITEM(ctx, CTX_STRINGS);
    c->data = PyTuple_GET_ITEM(ctx, CTX_STRINGS + 1);
    c->voters_kind = PyTuple_GET_ITEM(ctx, CTX_STRINGS + 2);
    c->nobody = PyTuple_GET_ITEM(ctx, CTX_STRINGS + 3);
    PyObject **tables[14] = {&c->election_timeout, &c->fetch_timeout, &c->request_vote,  &c->begin_quorum_epoch,
                             &c->fetch,            &c->client_write,  &c->check_quorum_resign, &c->isolate,
                             &c->heal,             &c->restart,       &c->add_voter,     &c->remove_voter,
                             &c->resign_removed,   &c->lose_disk};
    for (int i = 0; i < 14; i++) {
        *tables[i] = PyTuple_GET_ITEM(ctx, CTX_TABLES + i);
        if (!PyList_Check(*tables[i])) {
            PyErr_SetString(PyExc_TypeError, "successors(ctx, state): the action tables must be lists");
            return -1;
        }
    }
    long ints[CTX_SIZE - CTX_INTS];
    for (int i = 0; i < CTX_SIZE - CTX_INTS; i++) {
        ints[i] = PyLong_AsLong(PyTuple_GET_ITEM(ctx, CTX_INTS + i));
        if (ints[i] == -1 && PyErr_Occurred()) {
            return -1;
        }
    }
    long *sizes[9] = {&c->n, &c->n_voters, &c->majority, &c->max_records, &c->max_partitions, &c->max_restarts,
                      &c->fetch_max_records, &c->max_voter_changes, &c->max_disk_losses};
    for (int i = 0; i < 9; i++) {
        *sizes[i] = ints[i];
    }
    int *flags[7] = {&c->pre_vote, &c->check_quorum, &c->single_voter_exemption, &c->prevote_from_unfetched_follower,
                     &c->hw_needs_current_epoch, &c->directory_ids, &c->one_voter_change_at_a_time};
    for (int i = 0; i < 7; i++) {
        *flags[i] = ints[9 + i] != 0;
    }
    if (c->n < 1 || c->n > MAX_VOTERS || c->n_voters < 1 || c->n_voters > c->n || c->majority != c->n_voters / 2 + 1 ||
        PyList_GET_SIZE(c->election_timeout) != c->n) {
        PyErr_SetString(PyExc_ValueError, "successors(ctx, state): the context's sizes do not fit");
        return -1;
    }
    c->static_voters = c->max_voter_changes == 0;
    c->is_static = c->static_voters && c->n == c->n_voters && c->max_disk_losses == 0;
    c->bootstrap.k = (int)c->n_voters;
    c->bootstrap.ids = 0;
    c->bootstrap.obj = NULL;
    for (int i = 0; i < c->n_voters; i++) {
        c->bootstrap.id[i] = i;
        c->bootstrap.dir[i] = 0;
        c->bootstrap.ids |= 1u << i;
    }
    return 0;
}

static int step(const Context *c, const View *v, PyObject *out) {
    int any_faults = v->isolated || v->counters[S_PARTITIONS] < c->max_partitions ||
                     v->counters[S_RESTARTS] < c->max_restarts || v->counters[S_DISK_LOSSES] < c->max_disk_losses;
    for (int w = 0; w < v->n; w++) {
        const Val *me = &v->v[w];
        int role = me->role, status = 0;
        if (role == LEADER) {
            if (client_write(c, v, out, w) < 0 || check_quorum(c, v, out, w) < 0 ||
                begin_quorum_epoch(c, v, out, w) < 0) {
                return -1;
            }
            if (!c->static_voters && (kq_voter_changes(c, v, out, w) < 0 || kq_resign_removed(c, v, out, w) < 0)) {
                return -1;
            }
        } else if (!kq_is_voter(c, v, w, me)) {
            status = kq_observer(c, v, out, w);
        } else if (role == FOLLOWER) {
            if (kq_fetch(c, v, out, w) < 0 || fetch_timeout(c, v, out, w) < 0) {
                return -1;
            }
        } else if (role == PROSPECTIVE || role == CANDIDATE) {
            status = request_votes(c, v, out, w);
            if (status == 0) {
                status = election_timeout(c, v, out, w);
            }
        } else {
            status = election_timeout(c, v, out, w);
        }
        if (status < 0 || (any_faults && faults(c, v, out, w) < 0)) {
            return -1;
        }
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
    Sets sets;
    View v;
    v.sets = &sets;
    int status = kq_read_view(&c, args[1], &v);
    if (status < 0) {
        return NULL;
    }
    if (status > 0) {
        Py_RETURN_NONE;
    }
    PyObject *out = PyList_New(0);
    if (out == NULL) {
        return NULL;
    }
    if (step(&c, &v, out) < 0) {
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
    PyModuleDef_HEAD_INIT, "_successors", "The kraft-quorum model's successor function, in C.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__successors(void) { return PyModule_Create(&module); }
