/* The kraft-quorum model's C successor function, shared between its files: the sizes it handles,
 * the roles as numbers, which of the state's fields (fields.h) are counters, the context
 * (KraftQuorumModel._twin_context()), the C view of a state, and the functions one file offers the others.
 *
 * The files form layers, each calling only the ones below it (top first):
 *
 *   successors.c  the module: the context, successors, the election (timers, votes, Candidate,
 *                 Leader), the other steps in _successors' order, faults
 *   voters.c      KIP-853's steps: AddVoter/RemoveVoter, a removed leader's resignation, observers
 *   replica.c     a replica's transitions more than one file makes: _unattached/_follower, _learn,
 *                 the high watermark, resigning, a Fetch and its response
 *   state.c       a state's tuples into the view, the view's queries (two logs compared, a replica's
 *                 voter set from its log and who counts in it), and the view back into new tuples
 */
#ifndef KMC_KRAFT_QUORUM_H
#define KMC_KRAFT_QUORUM_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "tuples.h"
#include "fields.h"

#define MAX_VOTERS 8
#define MAX_LOG 32
#define NONE (-1)

enum { UNATTACHED, PROSPECTIVE, CANDIDATE, LEADER, FOLLOWER, RESIGNED, ROLE_COUNT };
/* The state's counters are its fields S_WRITES .. S_DISK_LOSSES, one after another (read and
 * rebuilt in one loop); NO_COUNTER, no field, is kq_next_state's "no counter changes". */
enum { NO_COUNTER = -1 };
_Static_assert(S_PARTITIONS == S_WRITES + 1 && S_RESTARTS == S_WRITES + 2 && S_VOTER_CHANGES == S_WRITES + 3 &&
                   S_DISK_LOSSES == S_WRITES + 4,
               "the QuorumState counters are contiguous fields");
/* A log holds Records and VotersRecords: a record's epoch is read at REC_EPOCH whichever it is. */
_Static_assert((int)REC_EPOCH == (int)VR_EPOCH, "a VotersRecord's epoch is where a Record's is");

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
    long counters[S_SIZE]; /* writes, partitions, ..., diskLosses at their fields, S_WRITES .. S_DISK_LOSSES */
} View;

/* Voter ``i`` as it is after a step, for kq_next_state. */
typedef struct {
    int i;
    const Val *x;
} Change;

static inline int connected(unsigned isolated, int a, int b) {
    return !isolated || a == b || (!(isolated & (1u << a)) && !(isolated & (1u << b)));
}

/* table[i][j][k]: the action tables are nested lists. */
static inline PyObject *act1(PyObject *table, long i) { return PyList_GET_ITEM(table, i); }
static inline PyObject *act2(PyObject *table, long i, long j) {
    return PyList_GET_ITEM(PyList_GET_ITEM(table, i), j);
}
static inline PyObject *act3(PyObject *table, long i, long j, long k) {
    return PyList_GET_ITEM(PyList_GET_ITEM(PyList_GET_ITEM(table, i), j), k);
}

/* state.c: the view */
int kq_read_view(const Context *c, PyObject *s, View *v);
int kq_last_cmp(const Val *a, const Val *b);
long kq_last_voters_offset(const Val *x);
const VSet *kq_voters_of(const Context *c, const View *v, const Val *x);
int kq_holds_key(const VSet *vs, long id, long dir);
int kq_is_voter(const Context *c, const View *v, int w, const Val *x);
long kq_majority_of(const Context *c, const View *v, const Val *x);
int kq_counts_fetch(const Context *c, const View *v, const Val *leader, int f, const Val *follower);
void kq_val_copy(Val *x, const Val *from);
void kq_val_clear(Val *x);
void kq_set_votes(Val *x, unsigned votes);
void kq_set_offsets_empty(Val *x);
void kq_set_offset(Val *x, int i, long offset);
void kq_set_log(Val *x, PyObject *log);
PyObject *kq_append_record(const Context *c, PyObject *log, long epoch, PyObject *kind);
PyObject *kq_next_state(const Context *c, const View *v, const Change *changes, int count, int counter, long delta);
int kq_emit1(const Context *c, const View *v, PyObject *out, PyObject *action, int i, Val *x, int counter, long delta);
PyObject *kq_with_isolated(const Context *c, const View *v, unsigned isolated, long partitions);

/* replica.c: a replica's shared transitions */
void kq_transition(Val *x, int role, long epoch, long leader);
int kq_learn(int v, Val *x, long epoch, long leader);
void kq_advance_hw(const Context *c, const View *v, Val *x);
int kq_resign(const Context *c, const View *v, PyObject *out, PyObject *action, int l);
int kq_fetch(const Context *c, const View *v, PyObject *out, int f);

/* voters.c: KIP-853's steps */
int kq_voter_changes(const Context *c, const View *v, PyObject *out, int l);
int kq_resign_removed(const Context *c, const View *v, PyObject *out, int l);
int kq_observer(const Context *c, const View *v, PyObject *out, int o);

#endif
