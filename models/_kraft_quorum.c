/* The successor function of models/kraft_quorum.py, in C: the same steps, in the same order, built
 * from the same NamedTuple types and action labels, for every combination of the model's flags --
 * KIP-853's too: a replica's voter set is the last VotersRecord in its log (else the bootstrap set),
 * read once per state into a table of voter sets (Sets) that a new VotersRecord joins for its step.
 *
 * successors(ctx, state) returns the list KraftQuorumModel._successors(state) returns, or None when
 * the state is outside what this code handles (the caller then runs the Python). ctx is the tuple
 * KraftQuorumModel._fast_context() builds: the state types, the role and record-kind strings, the
 * action tables and the configuration as small ints. The Python stays the definition; tests compare
 * the two on every reachable state.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#define MAX_VOTERS 8
#define MAX_LOG 32
#define NONE (-1)

enum { UNATTACHED, PROSPECTIVE, CANDIDATE, LEADER, FOLLOWER, RESIGNED, ROLE_COUNT };
enum { NO_COUNTER = 0, WRITES = 3, PARTITIONS = 4, RESTARTS = 5, VOTER_CHANGES = 6, DISK_LOSSES = 7 }; /* fields */

/* A voter set: its keys (replica id, directory id) sorted, and the frozenset they came from. */
typedef struct {
    int k;
    long id[MAX_VOTERS], dir[MAX_VOTERS];
    unsigned ids; /* the ids as a mask */
    PyObject *obj; /* borrowed */
} VSet;

/* The context, unpacked. */
typedef struct {
    PyTypeObject *state_type, *voter_type, *record_type, *committed_type, *voters_record_type;
    PyObject *roles[ROLE_COUNT];
    PyObject *leader_change, *data, *voters_kind, *nobody;
    PyObject *election_timeout, *fetch_timeout, *request_vote, *begin_quorum_epoch, *fetch, *client_write,
        *check_quorum_resign, *isolate, *heal, *restart, *add_voter, *remove_voter, *resign_removed, *lose_disk;
    long n, n_voters, majority, max_records, max_partitions, max_restarts, fetch_max_records, max_voter_changes,
        max_disk_losses;
    int pre_vote, check_quorum, single_voter_exemption, prevote_from_unfetched_follower, hw_needs_current_epoch,
        directory_ids, one_voter_change_at_a_time;
    int static_voters; /* no voter changes: every replica's voter set is the bootstrap set */
    int is_static;     /* nor observers nor lost disks: every replica a voter for ever */
    VSet bootstrap;
} Context;

/* One replica's state as C values. In the view its references are borrowed; a Val made from it by
 * val_copy owns them, and val_clear drops them. ``orig`` is the Voter it still equals (NULL once
 * changed): building it then gives that very object back, as the Python's ``is`` checks expect. */
typedef struct {
    int role;
    long epoch, votedId, leaderId, hw;
    PyObject *log;
    Py_ssize_t len;
    long rec[MAX_LOG];     /* the records' epochs */
    PyObject *rvs[MAX_LOG]; /* a VotersRecord's voters (borrowed from the log), else NULL */
    unsigned votes;
    PyObject *votes_obj; /* NULL: made from the mask */
    int noff;
    long off[MAX_VOTERS];
    PyObject *offs_obj; /* NULL: made from off[] */
    int hasFetched, hwKnown;
    long directoryId;
    PyObject *dir_obj;
    PyObject *orig;
} Val;

#define MAX_SETS 64

/* Every voter set the logs hold, read once per state (a voter set is looked up by its frozenset). */
typedef struct {
    int count;
    VSet set[MAX_SETS + 1]; /* one more: a VotersRecord being appended */
} Sets;

typedef struct {
    PyObject *state, *voters, *committed;
    Sets *sets;
    int n;
    Val v[MAX_VOTERS];
    unsigned isolated, hopeless;
    long counters[9]; /* writes, partitions, restarts, voterChanges, diskLosses at their fields' indexes */
} View;

static PyObject *mask_sets[1 << MAX_VOTERS]; /* the frozenset of each voter mask, made once */

static PyObject *mask_set(const Context *c, unsigned mask) {
    if (mask == 0) {
        return Py_NewRef(c->nobody);
    }
    PyObject *set = mask_sets[mask];
    if (set == NULL) {
        set = PyFrozenSet_New(NULL);
        if (set == NULL) {
            return NULL;
        }
        for (int r = 0; r < MAX_VOTERS; r++) {
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

/* -- reading the state (-1 and an exception; 0; 1 when the value is not one this code handles) --- */

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
    if (value != Py_True && value != Py_False) {
        return 1;
    }
    *out = value == Py_True;
    return 0;
}

/* A frozenset of ids in range(n) as a mask. */
static int read_mask(PyObject *set, int n, unsigned *out) {
    if (!PyFrozenSet_CheckExact(set) || PySet_GET_SIZE(set) > n) {
        return 1;
    }
    unsigned mask = 0;
#if PY_VERSION_HEX < 0x030D0000
    Py_ssize_t pos = 0;
    Py_hash_t hash;
    PyObject *key;
    while (_PySet_NextEntry(set, &pos, &key, &hash)) {
        long r;
        int status = read_long(key, &r);
        if (status != 0) {
            return status;
        }
        if (r < 0 || r >= n) {
            return 1;
        }
        mask |= 1u << r;
    }
#else
    PyObject *iter = PyObject_GetIter(set), *key;
    if (iter == NULL) {
        return -1;
    }
    while ((key = PyIter_Next(iter)) != NULL) {
        long r;
        int status = read_long(key, &r);
        Py_DECREF(key);
        if (status != 0 || r < 0 || r >= n) {
            Py_DECREF(iter);
            return status != 0 ? status : 1;
        }
        mask |= 1u << r;
    }
    Py_DECREF(iter);
    if (PyErr_Occurred()) {
        return -1;
    }
#endif
    *out = mask;
    return 0;
}

/* A key (id, directory id) of a voter set. */
static int read_key(PyObject *key, int n, long *id, long *dir) {
    if (!PyTuple_CheckExact(key) || PyTuple_GET_SIZE(key) != 2) {
        return 1;
    }
    int status;
    if ((status = read_long(PyTuple_GET_ITEM(key, 0), id)) != 0 ||
        (status = read_long(PyTuple_GET_ITEM(key, 1), dir)) != 0) {
        return status;
    }
    return *id < 0 || *id >= n ? 1 : 0;
}

/* A VotersRecord's voters: at most one key per replica id, sorted as sorted() sorts the keys. */
static int read_vset(PyObject *set, int n, VSet *out) {
    if (!PyFrozenSet_CheckExact(set) || PySet_GET_SIZE(set) > n) {
        return 1;
    }
    out->k = 0;
    out->ids = 0;
    out->obj = set;
#if PY_VERSION_HEX < 0x030D0000
    Py_ssize_t pos = 0;
    Py_hash_t hash;
    PyObject *key;
    while (_PySet_NextEntry(set, &pos, &key, &hash)) {
#else
    PyObject *iter = PyObject_GetIter(set), *key;
    if (iter == NULL) {
        return -1;
    }
    while ((key = PyIter_Next(iter)) != NULL) {
        Py_DECREF(key); /* the set holds it */
#endif
        long id, dir;
        int status = read_key(key, n, &id, &dir);
        if (status == 0 && (out->ids & (1u << id))) {
            status = 1;
        }
        if (status != 0) {
#if PY_VERSION_HEX >= 0x030D0000
            Py_DECREF(iter);
#endif
            return status;
        }
        int j = out->k++;
        while (j > 0 && out->id[j - 1] > id) {
            out->id[j] = out->id[j - 1];
            out->dir[j] = out->dir[j - 1];
            j--;
        }
        out->id[j] = id;
        out->dir[j] = dir;
        out->ids |= 1u << id;
    }
#if PY_VERSION_HEX >= 0x030D0000
    Py_DECREF(iter);
    if (PyErr_Occurred()) {
        return -1;
    }
#endif
    return 0;
}

static int read_role(const Context *c, PyObject *value, int *out) {
    for (int i = 0; i < ROLE_COUNT; i++) {
        if (value == c->roles[i]) {
            *out = i;
            return 0;
        }
    }
    if (!PyUnicode_CheckExact(value)) {
        return 1;
    }
    for (int i = 0; i < ROLE_COUNT; i++) {
        int eq = PyUnicode_Compare(value, c->roles[i]);
        if (eq == -1 && PyErr_Occurred()) {
            return -1;
        }
        if (eq == 0) {
            *out = i;
            return 0;
        }
    }
    return 1;
}

static int read_voter(const Context *c, PyObject *obj, int n, Sets *sets, Val *x) {
    if (!PyTuple_Check(obj) || PyTuple_GET_SIZE(obj) != 11) {
        return 1;
    }
    int status;
    if ((status = read_role(c, PyTuple_GET_ITEM(obj, 0), &x->role)) != 0 ||
        (status = read_long(PyTuple_GET_ITEM(obj, 1), &x->epoch)) != 0 ||
        (status = read_long(PyTuple_GET_ITEM(obj, 2), &x->votedId)) != 0 ||
        (status = read_long(PyTuple_GET_ITEM(obj, 3), &x->leaderId)) != 0 ||
        (status = read_long(PyTuple_GET_ITEM(obj, 5), &x->hw)) != 0 ||
        (status = read_mask(PyTuple_GET_ITEM(obj, 6), n, &x->votes)) != 0 ||
        (status = read_bool(PyTuple_GET_ITEM(obj, 8), &x->hasFetched)) != 0 ||
        (status = read_bool(PyTuple_GET_ITEM(obj, 9), &x->hwKnown)) != 0 ||
        (status = read_long(PyTuple_GET_ITEM(obj, 10), &x->directoryId)) != 0) {
        return status;
    }
    if (x->votedId < NONE || x->votedId >= n || x->leaderId < NONE || x->leaderId >= n || x->hw < 0) {
        return 1;
    }
    if (x->role == FOLLOWER && x->leaderId == NONE) {
        return 1;
    }
    x->log = PyTuple_GET_ITEM(obj, 4);
    if (!PyTuple_Check(x->log) || PyTuple_GET_SIZE(x->log) >= MAX_LOG) {
        return 1;
    }
    x->len = PyTuple_GET_SIZE(x->log);
    for (Py_ssize_t i = 0; i < x->len; i++) {
        PyObject *record = PyTuple_GET_ITEM(x->log, i);
        if (!PyTuple_Check(record) || PyTuple_GET_SIZE(record) < 2 || PyTuple_GET_SIZE(record) > 3) {
            return 1;
        }
        if ((status = read_long(PyTuple_GET_ITEM(record, 0), &x->rec[i])) != 0) {
            return status;
        }
        x->rvs[i] = NULL;
        if (PyTuple_GET_SIZE(record) == 3) { /* a VotersRecord: only a dynamic voter set has them */
            PyObject *set = PyTuple_GET_ITEM(record, 2);
            if (c->static_voters) {
                return 1;
            }
            int known = 0;
            for (int k = 0; k < sets->count && !known; k++) {
                known = sets->set[k].obj == set;
            }
            if (!known) {
                if (sets->count == MAX_SETS) {
                    return 1;
                }
                if ((status = read_vset(set, n, &sets->set[sets->count])) != 0) {
                    return status;
                }
                sets->count++;
            }
            x->rvs[i] = set;
        }
    }
    x->offs_obj = PyTuple_GET_ITEM(obj, 7);
    if (!PyTuple_Check(x->offs_obj)) {
        return 1;
    }
    x->noff = (int)PyTuple_GET_SIZE(x->offs_obj);
    if (x->noff != 0 && x->noff != n) {
        return 1;
    }
    for (int i = 0; i < x->noff; i++) {
        if ((status = read_long(PyTuple_GET_ITEM(x->offs_obj, i), &x->off[i])) != 0) {
            return status;
        }
        if (x->off[i] < 0 || x->off[i] > x->len) {
            return 1;
        }
    }
    if (x->role == LEADER && x->noff != n) {
        return 1;
    }
    x->votes_obj = PyTuple_GET_ITEM(obj, 6);
    x->dir_obj = PyTuple_GET_ITEM(obj, 10);
    x->orig = obj;
    return 0;
}

static int read_view(const Context *c, PyObject *s, View *v) {
    if (!PyTuple_Check(s) || PyTuple_GET_SIZE(s) != 9) {
        return 1;
    }
    v->state = s;
    v->voters = PyTuple_GET_ITEM(s, 0);
    if (!PyTuple_Check(v->voters) || PyTuple_GET_SIZE(v->voters) != c->n || c->n > MAX_VOTERS) {
        return 1;
    }
    v->n = (int)c->n;
    v->sets->count = 0;
    int status;
    for (int i = 0; i < v->n; i++) {
        if ((status = read_voter(c, PyTuple_GET_ITEM(v->voters, i), v->n, v->sets, &v->v[i])) != 0) {
            return status;
        }
    }
    v->committed = PyTuple_GET_ITEM(s, 2);
    if (!PyTuple_Check(v->committed)) {
        return 1;
    }
    if ((status = read_mask(PyTuple_GET_ITEM(s, 1), v->n, &v->isolated)) != 0 ||
        (status = read_mask(PyTuple_GET_ITEM(s, 8), v->n, &v->hopeless)) != 0) {
        return status;
    }
    for (int i = WRITES; i <= DISK_LOSSES; i++) {
        if ((status = read_long(PyTuple_GET_ITEM(s, i), &v->counters[i])) != 0) {
            return status;
        }
    }
    return 0;
}

/* -- values -------------------------------------------------------------------------------------- */

static void val_copy(Val *x, const Val *from) {
    *x = *from;
    Py_INCREF(x->log);
    Py_XINCREF(x->votes_obj);
    Py_XINCREF(x->offs_obj);
    Py_INCREF(x->dir_obj);
}

static void val_clear(Val *x) {
    Py_CLEAR(x->log);
    Py_CLEAR(x->votes_obj);
    Py_CLEAR(x->offs_obj);
    Py_CLEAR(x->dir_obj);
}

static void set_votes(Val *x, unsigned votes) {
    if (votes != x->votes) {
        x->votes = votes;
        Py_CLEAR(x->votes_obj);
        x->orig = NULL;
    }
}

static void set_offsets_empty(Val *x) {
    if (x->noff != 0) {
        x->noff = 0;
        Py_CLEAR(x->offs_obj);
        x->orig = NULL;
    }
}

static void set_offset(Val *x, int i, long offset) {
    if (x->off[i] != offset) {
        x->off[i] = offset;
        Py_CLEAR(x->offs_obj);
        x->orig = NULL;
    }
}

/* Replaces the log (stolen; NULL: an error, kept as NULL for val_build to report). */
static void set_log(Val *x, PyObject *log) {
    Py_XSETREF(x->log, log);
    x->orig = NULL;
}

/* Every maker steals the references it is given, and checks them. */
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

static PyObject *offsets_tuple(const Val *x) {
    PyObject *t = PyTuple_New(x->noff);
    if (t == NULL) {
        return NULL;
    }
    for (int i = 0; i < x->noff; i++) {
        PyObject *o = PyLong_FromLong(x->off[i]);
        if (o == NULL) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, i, o);
    }
    return t;
}

/* The Voter a Val stands for (a new reference). */
static PyObject *val_build(const Context *c, const Val *x) {
    if (x->orig != NULL) {
        return Py_NewRef(x->orig);
    }
    if (x->log == NULL) {
        return NULL;
    }
    PyObject *items[11] = {
        Py_NewRef(c->roles[x->role]),
        PyLong_FromLong(x->epoch),
        PyLong_FromLong(x->votedId),
        PyLong_FromLong(x->leaderId),
        Py_NewRef(x->log),
        PyLong_FromLong(x->hw),
        x->votes_obj != NULL ? Py_NewRef(x->votes_obj) : mask_set(c, x->votes),
        x->offs_obj != NULL ? Py_NewRef(x->offs_obj) : offsets_tuple(x),
        PyBool_FromLong(x->hasFetched),
        PyBool_FromLong(x->hwKnown),
        Py_NewRef(x->dir_obj),
    };
    return new_named(c->voter_type, 11, items);
}

static PyObject *append_record(const Context *c, PyObject *log, long epoch, PyObject *kind) {
    PyObject *items[2] = {PyLong_FromLong(epoch), Py_NewRef(kind)};
    PyObject *record = new_named(c->record_type, 2, items);
    if (record == NULL) {
        return NULL;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(log);
    PyObject *out = PyTuple_New(n + 1);
    if (out == NULL) {
        Py_DECREF(record);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyTuple_SET_ITEM(out, i, Py_NewRef(PyTuple_GET_ITEM(log, i)));
    }
    PyTuple_SET_ITEM(out, n, record);
    return out;
}

/* -- the model's helpers ------------------------------------------------------------------------- */

static int connected(unsigned isolated, int a, int b) {
    return !isolated || a == b || (!(isolated & (1u << a)) && !(isolated & (1u << b)));
}

static int popcount(unsigned mask) {
    int k = 0;
    for (; mask; mask &= mask - 1) {
        k++;
    }
    return k;
}

/* (last epoch, end offset) of a log, compared as the Python compares the pair. */
static int last_cmp(const Val *a, const Val *b) {
    long ae = a->len ? a->rec[a->len - 1] : 0, be = b->len ? b->rec[b->len - 1] : 0;
    if (ae != be) {
        return ae < be ? -1 : 1;
    }
    return a->len < b->len ? -1 : a->len > b->len;
}

/* last_voters_offset: the offset of the last VotersRecord, or -1. */
static long last_voters_offset(const Val *x) {
    for (Py_ssize_t i = x->len - 1; i >= 0; i--) {
        if (x->rvs[i] != NULL) {
            return (long)i;
        }
    }
    return -1;
}

/* voters_of: the last VotersRecord in the replica's log, else the bootstrap set. */
static const VSet *voters_of(const Context *c, const View *v, const Val *x) {
    long i = c->static_voters ? -1 : last_voters_offset(x);
    if (i >= 0) {
        for (int k = 0; k < v->sets->count; k++) {
            if (v->sets->set[k].obj == x->rvs[i]) {
                return &v->sets->set[k];
            }
        }
    }
    return &c->bootstrap;
}

static int holds_key(const VSet *vs, long id, long dir) {
    for (int k = 0; k < vs->k; k++) {
        if (vs->id[k] == id) {
            return vs->dir[k] == dir;
        }
    }
    return 0;
}

/* is_voter: the replica's own key is in its voter set. */
static int is_voter(const Context *c, const View *v, int w, const Val *x) {
    return c->is_static || holds_key(voters_of(c, v, x), w, x->directoryId);
}

static long majority_of(const Context *c, const View *v, const Val *x) {
    return c->static_voters ? c->majority : voters_of(c, v, x)->k / 2 + 1;
}

/* _unattached and _follower: a new role in ``epoch``, no vote, nothing volatile kept. */
static void transition(Val *x, int role, long epoch, long leader) {
    x->role = role;
    x->epoch = epoch;
    x->votedId = NONE;
    x->leaderId = leader;
    set_votes(x, 0);
    set_offsets_empty(x);
    x->hasFetched = 0;
    x->hwKnown = 0;
    x->orig = NULL;
}

/* _learn; whether ``x`` changed. */
static int learn(int v, Val *x, long epoch, long leader) {
    if (leader == v) {
        leader = NONE;
    }
    if (epoch > x->epoch) {
        transition(x, leader != NONE ? FOLLOWER : UNATTACHED, epoch, leader);
        return 1;
    }
    if (epoch == x->epoch && leader != NONE && x->leaderId == NONE) {
        transition(x, FOLLOWER, epoch, leader);
        return 1;
    }
    return 0;
}

/* LeaderState.maybeUpdateHighWatermark: over every replica's offset for a static voter set, else
 * over the leader's last voter set. */
static void advance_hw(const Context *c, const View *v, Val *x) {
    long sorted[MAX_VOTERS];
    int count = 0, rank = (int)c->majority - 1;
    const VSet *vs = c->static_voters ? NULL : voters_of(c, v, x);
    for (int i = 0; i < x->noff; i++) { /* descending insertion sort */
        if (vs != NULL && !(vs->ids & (1u << i))) {
            continue;
        }
        int j = count++;
        while (j > 0 && sorted[j - 1] < x->off[i]) {
            sorted[j] = sorted[j - 1];
            j--;
        }
        sorted[j] = x->off[i];
    }
    if (vs != NULL) {
        rank = count / 2;
    }
    long offset = sorted[rank];
    if (offset <= x->hw) {
        return;
    }
    if (c->hw_needs_current_epoch && x->rec[offset - 1] != x->epoch) {
        return;
    }
    x->hw = offset;
    x->hwKnown = 1;
    x->orig = NULL;
}

static void become_leader(const Context *c, const View *v, int w, Val *x) {
    set_log(x, x->log == NULL ? NULL : append_record(c, x->log, x->epoch, c->leader_change));
    x->rvs[x->len] = NULL;
    x->rec[x->len++] = x->epoch;
    x->role = LEADER;
    x->leaderId = w;
    set_votes(x, 0);
    Py_CLEAR(x->offs_obj);
    x->noff = (int)c->n;
    for (int r = 0; r < x->noff; r++) {
        x->off[r] = r == w ? (long)x->len : 0;
    }
    x->hasFetched = 0;
    x->hwKnown = 0;
    advance_hw(c, v, x);
}

static void become_candidate(const Context *c, const View *v, int w, Val *x);

/* _tally: a majority of pre-votes makes a Candidate, a majority of votes a Leader. */
static void tally(const Context *c, const View *v, int w, Val *x) {
    if (popcount(x->votes) < majority_of(c, v, x)) {
        return;
    }
    if (x->role == PROSPECTIVE) {
        become_candidate(c, v, w, x);
    } else if (x->role == CANDIDATE) {
        become_leader(c, v, w, x);
    }
}

static void become_candidate(const Context *c, const View *v, int w, Val *x) {
    transition(x, CANDIDATE, x->epoch + 1, NONE);
    x->votedId = w;
    set_votes(x, 1u << w);
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
        set_votes(x, 1u << w);
        x->hasFetched = 0;
        tally(c, v, w, x);
    } else if (x->leaderId != NONE) {
        transition(x, FOLLOWER, x->epoch, x->leaderId);
    } else {
        x->role = UNATTACHED;
        set_votes(x, 0);
    }
}

/* -- the next state ------------------------------------------------------------------------------ */

typedef struct {
    int i;
    const Val *x;
} Change;

/* _set: the state with these voters replaced, the committed history extended and the hopeless
 * Candidates updated; ``delta`` added to the counter at index ``counter`` (NO_COUNTER: none). */
static PyObject *next_state(const Context *c, const View *v, const Change *changes, int count, int counter,
                            long delta) {
    const Val *now[MAX_VOTERS];
    for (int i = 0; i < v->n; i++) {
        now[i] = &v->v[i];
    }
    int stood = -1;
    PyObject *voters = PyTuple_New(v->n);
    PyObject *committed = Py_NewRef(v->committed);
    if (voters == NULL) {
        Py_DECREF(committed);
        return NULL;
    }
    for (int k = 0; k < count; k++) {
        const Val *x = changes[k].x;
        int i = changes[k].i;
        now[i] = x;
        Py_ssize_t clen = PyTuple_GET_SIZE(committed);
        if (x->role == LEADER && x->hw > clen) {
            PyObject *more = PyTuple_New(x->hw);
            if (more == NULL || x->log == NULL) {
                Py_XDECREF(more);
                goto error;
            }
            for (Py_ssize_t o = 0; o < x->hw; o++) {
                PyObject *item;
                if (o < clen) {
                    item = Py_NewRef(PyTuple_GET_ITEM(committed, o));
                } else {
                    PyObject *items[2] = {Py_NewRef(PyTuple_GET_ITEM(PyTuple_GET_ITEM(x->log, o), 0)),
                                          PyLong_FromLong(x->epoch)};
                    item = new_named(c->committed_type, 2, items);
                    if (item == NULL) {
                        Py_DECREF(more);
                        goto error;
                    }
                }
                PyTuple_SET_ITEM(more, o, item);
            }
            Py_SETREF(committed, more);
        } else if (x->role == CANDIDATE && (v->v[i].role != CANDIDATE || v->v[i].epoch != x->epoch)) {
            stood = i;
        }
    }
    for (int i = 0; i < v->n; i++) {
        PyObject *voter = now[i] == &v->v[i] ? Py_NewRef(PyTuple_GET_ITEM(v->voters, i)) : val_build(c, now[i]);
        if (voter == NULL) {
            goto error;
        }
        PyTuple_SET_ITEM(voters, i, voter);
    }
    PyObject *s = v->state;
    PyObject *hopeless;
    if (!v->hopeless && stood < 0) {
        hopeless = Py_NewRef(PyTuple_GET_ITEM(s, 8));
    } else {
        unsigned mask = 0;
        for (int i = 0; i < v->n; i++) {
            if ((v->hopeless & (1u << i)) && now[i]->role == CANDIDATE && now[i]->epoch == v->v[i].epoch) {
                mask |= 1u << i;
            }
        }
        if (stood >= 0) { /* could_win: a majority of its voter set can reach it and holds a log no newer */
            const VSet *vs = voters_of(c, v, now[stood]);
            int electors = 0;
            for (int k = 0; k < vs->k; k++) {
                int w = (int)vs->id[k];
                if (now[w]->directoryId == vs->dir[k] && connected(v->isolated, stood, w)) {
                    electors += last_cmp(now[w], now[stood]) <= 0;
                }
            }
            if (electors < vs->k / 2 + 1) {
                mask |= 1u << stood;
            }
        }
        hopeless = mask_set(c, mask);
    }
    PyObject *items[9] = {voters, Py_NewRef(PyTuple_GET_ITEM(s, 1)), committed};
    for (int i = WRITES; i <= DISK_LOSSES; i++) {
        items[i] = i == counter ? PyLong_FromLong(v->counters[i] + delta) : Py_NewRef(PyTuple_GET_ITEM(s, i));
    }
    items[8] = hopeless;
    return new_named(c->state_type, 9, items);
error:
    Py_DECREF(voters);
    Py_DECREF(committed);
    return NULL;
}

/* Appends (action, next) to out, stealing next; -1 on error. */
static int emit(PyObject *out, PyObject *action, PyObject *next) {
    if (next == NULL) {
        return -1;
    }
    PyObject *pair = PyTuple_New(2);
    if (pair == NULL) {
        Py_DECREF(next);
        return -1;
    }
    PyTuple_SET_ITEM(pair, 0, Py_NewRef(action));
    PyTuple_SET_ITEM(pair, 1, next);
    int status = PyList_Append(out, pair);
    Py_DECREF(pair);
    return status;
}

/* One voter replaced, then the step emitted; x is cleared. */
static int emit1(const Context *c, const View *v, PyObject *out, PyObject *action, int i, Val *x, int counter,
                 long delta) {
    Change change = {i, x};
    int status = emit(out, action, next_state(c, v, &change, 1, counter, delta));
    val_clear(x);
    return status;
}

/* table[i][j][k]: the action tables are nested lists. */
static PyObject *act1(PyObject *table, long i) { return PyList_GET_ITEM(table, i); }
static PyObject *act2(PyObject *table, long i, long j) { return PyList_GET_ITEM(PyList_GET_ITEM(table, i), j); }
static PyObject *act3(PyObject *table, long i, long j, long k) {
    return PyList_GET_ITEM(PyList_GET_ITEM(PyList_GET_ITEM(table, i), j), k);
}

/* -- the steps ----------------------------------------------------------------------------------- */

static int client_write(const Context *c, const View *v, PyObject *out, int l) {
    if (v->counters[WRITES] >= c->max_records) {
        return 0;
    }
    Val x;
    val_copy(&x, &v->v[l]);
    set_log(&x, append_record(c, x.log, x.epoch, c->data));
    x.rvs[x.len] = NULL;
    x.rec[x.len++] = x.epoch;
    set_offset(&x, l, (long)x.len);
    advance_hw(c, v, &x);
    return emit1(c, v, out, act1(c->client_write, l), l, &x, WRITES, 1);
}

/* The leader as Resigned (check-quorum, or removed from the voter set). */
static int resign(const Context *c, const View *v, PyObject *out, PyObject *action, int l) {
    Val x;
    val_copy(&x, &v->v[l]);
    x.role = RESIGNED;
    x.orig = NULL;
    set_offsets_empty(&x);
    x.hwKnown = 0;
    return emit1(c, v, out, action, l, &x, NO_COUNTER, 0);
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
    const VSet *vs = voters_of(c, v, leader);
    for (int k = 0; k < vs->k; k++) {
        int w = (int)vs->id[k];
        fetching += w != l && v->v[w].directoryId == vs->dir[k] && connected(v->isolated, l, w) &&
                    v->v[w].epoch <= leader->epoch;
    }
    int own = holds_key(vs, l, leader->directoryId);
    return fetching + own < vs->k / 2 + 1;
}

static int check_quorum(const Context *c, const View *v, PyObject *out, int l) {
    if (!c->check_quorum) {
        return 0;
    }
    int lone = voters_of(c, v, &v->v[l])->k == 1;
    if (lone && c->single_voter_exemption) {
        return 0;
    }
    if (!lone && !quorum_lost(c, v, l)) {
        return 0;
    }
    return resign(c, v, out, act1(c->check_quorum_resign, l), l);
}

static int begin_quorum_epoch(const Context *c, const View *v, PyObject *out, int l) {
    const Val *leader = &v->v[l];
    unsigned ids = voters_of(c, v, leader)->ids;
    for (int w = 0; w < v->n; w++) {
        const Val *me = &v->v[w];
        if (!(ids & (1u << w)) || w == l || me->epoch > leader->epoch || !connected(v->isolated, l, w)) {
            continue;
        }
        if (me->role == FOLLOWER && me->leaderId == l && me->epoch == leader->epoch) {
            continue;
        }
        Val x;
        val_copy(&x, me);
        transition(&x, FOLLOWER, leader->epoch, l);
        if (emit1(c, v, out, act2(c->begin_quorum_epoch, l, w), w, &x, NO_COUNTER, 0) < 0) {
            return -1;
        }
    }
    return 0;
}

/* LeaderEpochFileCache.endOffsetFor. */
static void end_offset_for_epoch(const Val *x, long epoch, long *found, long *end) {
    *found = 0;
    *end = 0;
    for (Py_ssize_t o = 0; o < x->len && x->rec[o] <= epoch; o++) {
        *found = x->rec[o];
        *end = (long)o + 1;
    }
}

/* counts_fetch: the leader records the fetch as a voter's or an observer's. */
static int counts_fetch(const Context *c, const View *v, const Val *leader, int f, const Val *follower) {
    if (c->is_static) {
        return 1;
    }
    const VSet *vs = voters_of(c, v, leader);
    return holds_key(vs, f, follower->directoryId) || !(vs->ids & (1u << f));
}

static int fetch(const Context *c, const View *v, PyObject *out, int f) {
    const Val *me = &v->v[f];
    int l = (int)me->leaderId;
    if (!connected(v->isolated, f, l)) {
        return 0;
    }
    const Val *leader = &v->v[l];
    PyObject *action = act2(c->fetch, f, l);
    Val x;
    val_copy(&x, me);
    if (leader->role != LEADER || leader->epoch != me->epoch) {
        if (!learn(f, &x, leader->epoch, leader->leaderId)) {
            val_clear(&x);
            return 0;
        }
        return emit1(c, v, out, action, f, &x, NO_COUNTER, 0);
    }
    Py_ssize_t fetch_offset = me->len;
    long last_epoch = me->len ? me->rec[me->len - 1] : 0, epoch, end;
    end_offset_for_epoch(leader, last_epoch, &epoch, &end);
    if (epoch != last_epoch || end < fetch_offset) { /* a diverging epoch: truncate */
        long local_epoch, local_end;
        end_offset_for_epoch(me, epoch, &local_epoch, &local_end);
        long truncate_to = local_epoch == epoch && end < local_end ? end : local_end;
        set_log(&x, PyTuple_GetSlice(me->log, 0, truncate_to));
        x.len = truncate_to;
        x.hw = me->hw < truncate_to ? me->hw : truncate_to;
        x.hasFetched = 1;
        return emit1(c, v, out, action, f, &x, NO_COUNTER, 0);
    }
    Val y;
    val_copy(&y, leader);
    if (counts_fetch(c, v, leader, f, me)) {
        set_offset(&y, f, (long)fetch_offset);
        advance_hw(c, v, &y);
    }
    Py_ssize_t take = leader->len - fetch_offset;
    if (c->fetch_max_records && take > c->fetch_max_records) {
        take = c->fetch_max_records;
    }
    long hw = y.hwKnown ? (y.hw < fetch_offset + take ? y.hw : (long)(fetch_offset + take)) : me->hw;
    if (take == 0 && hw == me->hw && me->hasFetched && y.orig != NULL) {
        val_clear(&x);
        val_clear(&y);
        return 0; /* nothing new on either side: the fetch waits in purgatory */
    }
    if (take > 0) {
        PyObject *log = PyTuple_New(fetch_offset + take);
        if (log != NULL) {
            for (Py_ssize_t o = 0; o < fetch_offset + take; o++) {
                PyObject *from = o < fetch_offset ? me->log : leader->log;
                PyTuple_SET_ITEM(log, o, Py_NewRef(PyTuple_GET_ITEM(from, o)));
            }
        }
        set_log(&x, log);
        for (Py_ssize_t o = fetch_offset; o < fetch_offset + take; o++) {
            x.rec[o] = leader->rec[o];
            x.rvs[o] = leader->rvs[o];
        }
        x.len = fetch_offset + take;
    }
    if (hw != x.hw || !x.hasFetched) {
        x.hw = hw;
        x.hasFetched = 1;
        x.orig = NULL;
    }
    Change changes[2] = {{f, &x}, {l, &y}};
    int status = emit(out, action, next_state(c, v, changes, 2, NO_COUNTER, 0));
    val_clear(&x);
    val_clear(&y);
    return status;
}

static int fetch_timeout(const Context *c, const View *v, PyObject *out, int f) {
    const Val *me = &v->v[f];
    const Val *leader = &v->v[me->leaderId];
    if (leader->role == LEADER && leader->epoch == me->epoch && connected(v->isolated, f, (int)me->leaderId)) {
        return 0;
    }
    Val x;
    val_copy(&x, me);
    timed_out(c, v, f, &x);
    return emit1(c, v, out, act1(c->fetch_timeout, f), f, &x, NO_COUNTER, 0);
}

static int election_timeout(const Context *c, const View *v, PyObject *out, int w) {
    Val x;
    val_copy(&x, &v->v[w]);
    timed_out(c, v, w, &x);
    return emit1(c, v, out, act1(c->election_timeout, w), w, &x, NO_COUNTER, 0);
}

/* A Vote request (a pre-vote from a Prospective) from ``cand`` to ``w`` and its response: 1 when
 * it changes something (x and y then hold the voter and the candidate), else 0. */
static int vote_round(const Context *c, const View *v, int ci, int w, Val *x, Val *y) {
    const Val *cand = &v->v[ci], *me = &v->v[w];
    int pre_vote = cand->role == PROSPECTIVE, granted = 0;
    val_copy(x, me);
    if (cand->epoch >= me->epoch) {
        int log_ok = last_cmp(cand, me) >= 0;
        if (cand->epoch > me->epoch) {
            transition(x, UNATTACHED, cand->epoch, NONE);
        }
        const VSet *vs = c->is_static || !c->directory_ids ? NULL : voters_of(c, v, cand);
        if (vs != NULL && (vs->ids & (1u << w)) && !holds_key(vs, w, x->directoryId)) {
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
    val_copy(y, cand);
    if (!learn(ci, y, x->epoch, x->leaderId)) {
        if (!granted) {
            if (x->orig != NULL) {
                val_clear(x);
                val_clear(y);
                return 0;
            }
            return 1;
        }
        set_votes(y, y->votes | (1u << w));
        tally(c, v, ci, y);
    }
    return 1;
}

/* Whether any request was sent; -1 on error. */
static int request_votes(const Context *c, const View *v, PyObject *out, int ci) {
    const Val *cand = &v->v[ci];
    int pre_vote = cand->role == PROSPECTIVE, sent = 0;
    unsigned ids = voters_of(c, v, cand)->ids;
    for (int w = 0; w < v->n; w++) {
        if (!(ids & (1u << w)) || (cand->votes & (1u << w)) || w == ci || !connected(v->isolated, ci, w)) {
            continue;
        }
        Val x, y;
        if (!vote_round(c, v, ci, w, &x, &y)) {
            continue;
        }
        Change changes[2] = {{w, &x}, {ci, &y}};
        int status = emit(out, act3(c->request_vote, ci, w, pre_vote), next_state(c, v, changes, 2, NO_COUNTER, 0));
        val_clear(&x);
        val_clear(&y);
        if (status < 0) {
            return -1;
        }
        sent = 1;
    }
    return sent;
}

/* -- KIP-853: voter changes, observers, lost disks ----------------------------------------------- */

/* _append_voters: the leader appends a VotersRecord of ``vs`` (its keys; the frozenset is made here). */
static int append_voters(const Context *c, const View *v, PyObject *out, PyObject *action, int l, VSet *vs,
                         int removed) {
    PyObject *set = PyFrozenSet_New(NULL);
    if (set == NULL) {
        return -1;
    }
    for (int k = 0; k < vs->k; k++) {
        PyObject *key = Py_BuildValue("(ll)", vs->id[k], vs->dir[k]);
        if (key == NULL || PySet_Add(set, key) < 0) {
            Py_XDECREF(key);
            Py_DECREF(set);
            return -1;
        }
        Py_DECREF(key);
    }
    const Val *leader = &v->v[l];
    PyObject *items[3] = {PyLong_FromLong(leader->epoch), Py_NewRef(c->voters_kind), set};
    PyObject *record = new_named(c->voters_record_type, 3, items);
    if (record == NULL) {
        return -1;
    }
    Py_ssize_t n = leader->len;
    PyObject *log = PyTuple_New(n + 1);
    if (log == NULL) {
        Py_DECREF(record);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyTuple_SET_ITEM(log, i, Py_NewRef(PyTuple_GET_ITEM(leader->log, i)));
    }
    PyTuple_SET_ITEM(log, n, record);
    vs->obj = set; /* held by the log */
    Sets *sets = v->sets;
    sets->set[sets->count++] = *vs;
    Val x;
    val_copy(&x, leader);
    set_log(&x, log);
    x.rvs[x.len] = set;
    x.rec[x.len++] = x.epoch;
    set_offset(&x, l, (long)x.len);
    if (removed >= 0 && removed != l) {
        set_offset(&x, removed, 0);
    }
    advance_hw(c, v, &x);
    int status = emit1(c, v, out, action, l, &x, VOTER_CHANGES, 1);
    sets->count--;
    return status;
}

/* _voter_changes: AddVoter and RemoveVoter, handled by the leader. */
static int voter_changes(const Context *c, const View *v, PyObject *out, int l) {
    const Val *leader = &v->v[l];
    if (v->counters[VOTER_CHANGES] >= c->max_voter_changes || !leader->hwKnown) {
        return 0;
    }
    if (c->one_voter_change_at_a_time && last_voters_offset(leader) >= leader->hw) {
        return 0;
    }
    const VSet *vs = voters_of(c, v, leader);
    for (int o = 0; o < v->n; o++) {
        if ((vs->ids & (1u << o)) || !connected(v->isolated, l, o) || leader->off[o] != leader->len) {
            continue;
        }
        VSet added = *vs;
        int j = added.k++;
        while (j > 0 && added.id[j - 1] > o) {
            added.id[j] = added.id[j - 1];
            added.dir[j] = added.dir[j - 1];
            j--;
        }
        added.id[j] = o;
        added.dir[j] = v->v[o].directoryId;
        added.ids |= 1u << o;
        if (append_voters(c, v, out, act2(c->add_voter, l, o), l, &added, -1) < 0) {
            return -1;
        }
    }
    if (vs->k > 1) {
        for (int k = 0; k < vs->k; k++) {
            VSet less = {0};
            for (int i = 0; i < vs->k; i++) {
                if (i != k) {
                    less.id[less.k] = vs->id[i];
                    less.dir[less.k++] = vs->dir[i];
                    less.ids |= 1u << vs->id[i];
                }
            }
            int o = (int)vs->id[k];
            if (append_voters(c, v, out, act2(c->remove_voter, l, o), l, &less, o) < 0) {
                return -1;
            }
        }
    }
    return 0;
}

/* _resign_removed: a leader no longer in its voter set resigns once that record is committed. */
static int resign_removed(const Context *c, const View *v, PyObject *out, int l) {
    const Val *leader = &v->v[l];
    if (c->static_voters || is_voter(c, v, l, leader) || !leader->hwKnown) {
        return 0;
    }
    if (leader->hw > last_voters_offset(leader)) {
        return resign(c, v, out, act1(c->resign_removed, l), l);
    }
    return 0;
}

/* _discover: an observer with no leader to fetch from asks any voter it knows. */
static int discover(const Context *c, const View *v, PyObject *out, int o) {
    const Val *me = &v->v[o];
    if (me->role == FOLLOWER) {
        const Val *leader = &v->v[me->leaderId];
        if (connected(v->isolated, o, (int)me->leaderId) && leader->role == LEADER && leader->epoch == me->epoch) {
            return 0;
        }
    }
    unsigned ids = voters_of(c, v, me)->ids;
    for (int w = 0; w < v->n; w++) {
        if (!(ids & (1u << w)) || w == o || !connected(v->isolated, o, w)) {
            continue;
        }
        Val x;
        val_copy(&x, me);
        if (!learn(o, &x, v->v[w].epoch, v->v[w].leaderId)) {
            val_clear(&x);
            continue;
        }
        if (emit1(c, v, out, act2(c->fetch, o, w), o, &x, NO_COUNTER, 0) < 0) {
            return -1;
        }
    }
    return 0;
}

/* An observer's step: it only fetches (and a removed leader that resigned leaves its epoch). */
static int observer(const Context *c, const View *v, PyObject *out, int o) {
    const Val *me = &v->v[o];
    if (me->role == FOLLOWER && fetch(c, v, out, o) < 0) {
        return -1;
    }
    if (me->role == RESIGNED) { /* _leave_resigned */
        Val x;
        val_copy(&x, me);
        transition(&x, UNATTACHED, me->epoch + 1, NONE);
        return emit1(c, v, out, act1(c->election_timeout, o), o, &x, NO_COUNTER, 0);
    }
    return discover(c, v, out, o);
}

/* -- faults -------------------------------------------------------------------------------------- */

static PyObject *with_isolated(const Context *c, const View *v, unsigned isolated, long partitions) {
    PyObject *s = v->state;
    PyObject *items[9];
    for (int i = 0; i < 9; i++) {
        items[i] = Py_NewRef(PyTuple_GET_ITEM(s, i));
    }
    Py_SETREF(items[1], mask_set(c, isolated));
    if (partitions) {
        Py_SETREF(items[4], PyLong_FromLong(v->counters[PARTITIONS] + partitions));
    }
    return new_named(c->state_type, 9, items);
}

static int faults(const Context *c, const View *v, PyObject *out, int w) {
    int status = 0;
    unsigned bit = 1u << w;
    if (v->isolated & bit) {
        status = emit(out, act1(c->heal, w), with_isolated(c, v, v->isolated & ~bit, 0));
    } else if (v->counters[PARTITIONS] < c->max_partitions && v->n > 1) {
        status = emit(out, act1(c->isolate, w), with_isolated(c, v, v->isolated | bit, 1));
    }
    if (status < 0) {
        return -1;
    }
    if (v->counters[RESTARTS] < c->max_restarts) { /* _restarted: from the durable quorum-state */
        Val x;
        val_copy(&x, &v->v[w]);
        int role = (x.role == LEADER || x.role == RESIGNED) && x.leaderId == w ? RESIGNED
                   : x.leaderId != NONE                                       ? FOLLOWER
                                                                              : UNATTACHED;
        long votedId = x.votedId;
        transition(&x, role, x.epoch, x.leaderId);
        x.votedId = votedId;
        x.hw = 0;
        if (emit1(c, v, out, act1(c->restart, w), w, &x, RESTARTS, 1) < 0) {
            return -1;
        }
    }
    if (v->counters[DISK_LOSSES] < c->max_disk_losses) { /* _lose_disk: an empty log directory */
        Val x;
        val_copy(&x, &v->v[w]);
        transition(&x, UNATTACHED, 0, NONE);
        set_log(&x, PyTuple_New(0));
        x.len = 0;
        x.hw = 0;
        if (c->directory_ids) {
            x.directoryId++;
            Py_SETREF(x.dir_obj, PyLong_FromLong(x.directoryId));
            if (x.dir_obj == NULL) {
                val_clear(&x);
                return -1;
            }
        }
        return emit1(c, v, out, act1(c->lose_disk, w), w, &x, DISK_LOSSES, 1);
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
    int any_faults = v->isolated || v->counters[PARTITIONS] < c->max_partitions ||
                     v->counters[RESTARTS] < c->max_restarts || v->counters[DISK_LOSSES] < c->max_disk_losses;
    for (int w = 0; w < v->n; w++) {
        const Val *me = &v->v[w];
        int role = me->role, status = 0;
        if (role == LEADER) {
            if (client_write(c, v, out, w) < 0 || check_quorum(c, v, out, w) < 0 ||
                begin_quorum_epoch(c, v, out, w) < 0) {
                return -1;
            }
            if (!c->static_voters && (voter_changes(c, v, out, w) < 0 || resign_removed(c, v, out, w) < 0)) {
                return -1;
            }
        } else if (!is_voter(c, v, w, me)) {
            status = observer(c, v, out, w);
        } else if (role == FOLLOWER) {
            if (fetch(c, v, out, w) < 0 || fetch_timeout(c, v, out, w) < 0) {
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
    int status = read_view(&c, args[1], &v);
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
    PyModuleDef_HEAD_INIT, "_kraft_quorum", "The kraft-quorum model's successor function, in C.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__kraft_quorum(void) { return PyModule_Create(&module); }
