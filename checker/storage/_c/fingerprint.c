/* The 64-bit fingerprint of fingerprint.py, in C, for the types states are mostly made of.
 *
 * The fingerprint is a hash of the value's structure, computed bottom up: an int is mixed with a
 * tag, a str or bytes is hashed over its 8-byte words, a tuple (NamedTuples included) folds its
 * items' hashes in order, a set sums its items' mixed hashes (so the order it holds them in does
 * not matter). Equal values get equal fingerprints, as the pure-Python `_hash_python` computes
 * them; anything else (an Enum, a dataclass, a mapping, a float, a big int) is handed to
 * fallback(value), which returns its fingerprint. No bytes are written: only the hashes move.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define P1 0x9E3779B185EBCA87ULL
#define P2 0xC2B2AE3D27D4EB4FULL
#define TAG_INT 0x165667B19E3779F9ULL
#define TAG_STR 0x27D4EB2F165667C5ULL
#define TAG_BYTES 0x85EBCA77C2B2AE63ULL
#define TAG_NONE 0xD6E8FEB86659FD93ULL
#define TAG_TUPLE 0xA0761D6478BD642FULL
#define TAG_SET 0xE7037ED1A0B428DBULL
#define TAG_SET_ITEM 0x8EBC6AF09C88C6E3ULL

static inline uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

/* MurmurHash3's finalizer: every bit of the input moves every bit of the output. */
static inline uint64_t mix(uint64_t h) {
    h ^= h >> 33;
    h *= 0xFF51AFD7ED558CCDULL;
    h ^= h >> 33;
    h *= 0xC4CEB9FE1A85EC53ULL;
    h ^= h >> 33;
    return h;
}

/* One item folded into an ordered accumulator (xxHash64's round). */
static inline uint64_t fold(uint64_t acc, uint64_t item) { return rotl(acc + item * P2, 31) * P1; }

static uint64_t hash_bytes(const char *data, Py_ssize_t n, uint64_t tag) {
    uint64_t acc = tag + (uint64_t)n * P1;
    Py_ssize_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t word;
        memcpy(&word, data + i, 8);
        acc = fold(acc, word); /* little-endian hosts: the Python twin reads words little-endian */
    }
    if (i < n) {
        uint64_t word = 0;
        memcpy(&word, data + i, (size_t)(n - i));
        acc = fold(acc, word);
    }
    return mix(acc);
}

/* The hashes of recently met tuples and frozensets, by the object's address. A successor shares
 * most of its parts with the state it came from (the model rebuilds only what an action changed),
 * so a successor's siblings find their parts here, and a part found is not walked again. A slot
 * holds a reference to its object: while it is there, no other object can have that address.
 * Only parts whose hash cannot change are kept. A small table does best: the parts a parent's
 * successors share are met one after the other, and a larger table misses the processor's cache. */
#define IDENTITY_SLOTS 1024
typedef struct {
    PyObject *value;
    uint64_t hash;
} Slot;
static Slot *identity_cache;

static inline Slot *slot_of(PyObject *value) {
    uintptr_t address = (uintptr_t)value;
    return &identity_cache[((address >> 4) ^ (address >> 17)) % IDENTITY_SLOTS];
}

static void keep_in_slot(Slot *slot, PyObject *value, uint64_t hash) {
    PyObject *old = slot->value;
    slot->value = NULL;
    slot->hash = hash;
    slot->value = Py_NewRef(value);
    Py_XDECREF(old);
}

#define FROZENSET_CACHE_LIMIT (1 << 16)
#define LARGE_SET 16
static PyObject *frozenset_cache; /* frozenset -> its fingerprint (int): states share them */
static PyObject *fallback;        /* fingerprint.py's _hash_python */

/* *frail is set when a value's hash may change while the object lives on: a mutable set, or
 * anything the fallback hashes (a mapping, a dataclass that is not frozen...). */
static int hash_of(PyObject *value, int depth, int *frail, uint64_t *out);

static int hash_by_fallback(PyObject *value, int *frail, uint64_t *out) {
    *frail = 1;
    if (fallback == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "fingerprint: no fallback set");
        return -1;
    }
    PyObject *hashed = PyObject_CallOneArg(fallback, value);
    if (hashed == NULL) {
        return -1;
    }
    *out = PyLong_AsUnsignedLongLong(hashed);
    Py_DECREF(hashed);
    return *out == (uint64_t)-1 && PyErr_Occurred() ? -1 : 0;
}

static int hash_set(PyObject *value, int depth, int *frail, uint64_t *out) {
    Py_ssize_t n = PySet_GET_SIZE(value);
    uint64_t sum = 0;
#if PY_VERSION_HEX < 0x030D0000
    Py_ssize_t pos = 0;
    PyObject *key;
    Py_hash_t unused;
    while (_PySet_NextEntry(value, &pos, &key, &unused)) {
        Py_INCREF(key);
#else
    PyObject *iter = PyObject_GetIter(value);
    if (iter == NULL) {
        return -1;
    }
    PyObject *key;
    while ((key = PyIter_Next(iter)) != NULL) {
#endif
        uint64_t item;
        int status = hash_of(key, depth + 1, frail, &item);
        Py_DECREF(key);
        if (status < 0) {
#if PY_VERSION_HEX >= 0x030D0000
            Py_DECREF(iter);
#endif
            return -1;
        }
        sum += mix(item ^ TAG_SET_ITEM);
    }
#if PY_VERSION_HEX >= 0x030D0000
    Py_DECREF(iter);
    if (PyErr_Occurred()) {
        return -1;
    }
#endif
    *out = mix(sum ^ (TAG_SET + (uint64_t)n * P1));
    return 0;
}

/* A tuple inside the value, of two items or more, is kept by identity (a state itself is new,
 * and a shorter tuple costs less to hash than to keep). */
static int hash_tuple(PyObject *value, int depth, int *frail, uint64_t *out) {
    Py_ssize_t n = PyTuple_GET_SIZE(value);
    Slot *slot = NULL;
    if (depth > 0 && n >= 2) {
        slot = slot_of(value);
        if (slot->value == value) {
            *out = slot->hash;
            return 0;
        }
    }
    uint64_t acc = TAG_TUPLE + (uint64_t)n * P1;
    int items_frail = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        uint64_t item;
        if (hash_of(PyTuple_GET_ITEM(value, i), depth + 1, &items_frail, &item) < 0) {
            return -1;
        }
        acc = fold(acc, item);
    }
    *out = mix(acc);
    if (items_frail) {
        *frail = 1;
    } else if (slot != NULL) {
        keep_in_slot(slot, value, *out);
    }
    return 0;
}

static int hash_frozenset(PyObject *value, int depth, int *frail, uint64_t *out) {
    Slot *slot = slot_of(value);
    if (slot->value == value) {
        *out = slot->hash;
        return 0;
    }
    /* A large frozenset is looked up by value (it keeps its hash); a small one costs less to hash
     * than to compare with the one found. */
    int large = PySet_GET_SIZE(value) > LARGE_SET;
    PyObject *cached = large ? PyDict_GetItemWithError(frozenset_cache, value) : NULL;
    if (cached != NULL) {
        *out = PyLong_AsUnsignedLongLong(cached);
        keep_in_slot(slot, value, *out);
        return 0;
    }
    if (PyErr_Occurred()) {
        return -1;
    }
    int items_frail = 0;
    if (hash_set(value, depth, &items_frail, out) < 0) {
        return -1;
    }
    if (items_frail) {
        *frail = 1;
        return 0;
    }
    keep_in_slot(slot, value, *out);
    if (!large) {
        return 0;
    }
    PyObject *hashed = PyLong_FromUnsignedLongLong(*out);
    if (hashed == NULL) {
        return -1;
    }
    if (PyDict_GET_SIZE(frozenset_cache) >= FROZENSET_CACHE_LIMIT) {
        PyDict_Clear(frozenset_cache);
    }
    int status = PyDict_SetItem(frozenset_cache, value, hashed);
    Py_DECREF(hashed);
    return status;
}

static int hash_of(PyObject *value, int depth, int *frail, uint64_t *out) {
    if (depth > 500) {
        PyErr_SetString(PyExc_RecursionError, "state nested too deeply to fingerprint");
        return -1;
    }
    if (PyLong_CheckExact(value) || PyBool_Check(value)) {
        int overflow = 0;
        long long v = PyLong_AsLongLongAndOverflow(value, &overflow);
        if (overflow != 0) {
            return hash_by_fallback(value, frail, out);
        }
        if (v == -1 && PyErr_Occurred()) {
            return -1;
        }
        *out = mix((uint64_t)v ^ TAG_INT);
        return 0;
    }
    if (PyTuple_Check(value)) {
        return hash_tuple(value, depth, frail, out);
    }
    if (PyUnicode_CheckExact(value)) {
        Py_ssize_t n;
        const char *text = PyUnicode_AsUTF8AndSize(value, &n);
        if (text == NULL) {
            return -1;
        }
        *out = hash_bytes(text, n, TAG_STR);
        return 0;
    }
    if (value == Py_None) {
        *out = TAG_NONE;
        return 0;
    }
    if (PyFrozenSet_CheckExact(value)) {
        return hash_frozenset(value, depth, frail, out);
    }
    if (PyAnySet_Check(value)) {
        *frail = 1;
        return hash_set(value, depth, frail, out);
    }
    if (PyBytes_CheckExact(value)) {
        *out = hash_bytes(PyBytes_AS_STRING(value), PyBytes_GET_SIZE(value), TAG_BYTES);
        return 0;
    }
    return hash_by_fallback(value, frail, out);
}

static int fingerprint_value(PyObject *value, uint64_t *out) {
    int frail = 0;
    return hash_of(value, 0, &frail, out);
}

static PyObject *fingerprint(PyObject *Py_UNUSED(module), PyObject *value) {
    uint64_t fp;
    if (fingerprint_value(value, &fp) < 0) {
        return NULL;
    }
    return PyLong_FromUnsignedLongLong(fp);
}

static PyObject *set_fallback(PyObject *Py_UNUSED(module), PyObject *function) {
    Py_XSETREF(fallback, Py_NewRef(function));
    Py_RETURN_NONE;
}

/* A level's candidates, as the Spark engine gathers them from a partition's frontier: per
 * fingerprint of a successor, the least parent that generated it and the successor that parent
 * gave. An open-addressing table of fingerprints (a fingerprint is already uniformly spread)
 * indexes arrays kept in the order fingerprints were first met: one memory access a successor
 * where dictionaries keyed by int objects take several. */
typedef struct {
    PyObject_HEAD
    uint64_t *table;   /* per slot: fingerprint, and 1 + its index (0: empty) */
    Py_ssize_t slots;  /* a power of 2 */
    uint64_t *fps;     /* by index */
    uint64_t *parents; /* by index */
    Py_ssize_t count;
    Py_ssize_t capacity;
    PyObject *states; /* list, by index */
} Candidates;

static int candidates_grow(Candidates *self) {
    Py_ssize_t capacity = self->capacity ? 2 * self->capacity : 1024;
    uint64_t *fps = PyMem_Realloc(self->fps, (size_t)capacity * sizeof(uint64_t));
    if (fps == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    self->fps = fps;
    uint64_t *parents = PyMem_Realloc(self->parents, (size_t)capacity * sizeof(uint64_t));
    if (parents == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    self->parents = parents;
    self->capacity = capacity;
    Py_ssize_t slots = 2 * capacity; /* at most half full */
    uint64_t *table = PyMem_Calloc((size_t)slots, 2 * sizeof(uint64_t));
    if (table == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < self->count; i++) {
        Py_ssize_t at = (Py_ssize_t)(self->fps[i] & (uint64_t)(slots - 1));
        while (table[2 * at + 1] != 0) {
            at = (at + 1) & (slots - 1);
        }
        table[2 * at] = self->fps[i];
        table[2 * at + 1] = (uint64_t)i + 1;
    }
    PyMem_Free(self->table);
    self->table = table;
    self->slots = slots;
    return 0;
}

static int candidates_offer(Candidates *self, uint64_t fp, uint64_t parent, PyObject *state) {
    if (self->count == self->capacity && candidates_grow(self) < 0) {
        return -1;
    }
    Py_ssize_t mask = self->slots - 1;
    Py_ssize_t at = (Py_ssize_t)(fp & (uint64_t)mask);
    uint64_t *table = self->table;
    while (table[2 * at + 1] != 0) {
        if (table[2 * at] == fp) {
            Py_ssize_t i = (Py_ssize_t)table[2 * at + 1] - 1;
            if (parent < self->parents[i]) { /* the least parent: every attempt keeps the same */
                self->parents[i] = parent;
                Py_INCREF(state);
                PyObject *old = PyList_GET_ITEM(self->states, i);
                PyList_SET_ITEM(self->states, i, state);
                Py_DECREF(old);
            }
            return 0;
        }
        at = (at + 1) & mask;
    }
    if (PyList_Append(self->states, state) < 0) {
        return -1;
    }
    table[2 * at] = fp;
    table[2 * at + 1] = (uint64_t)self->count + 1;
    self->fps[self->count] = fp;
    self->parents[self->count] = parent;
    self->count++;
    return 0;
}

static PyObject *candidates_add(Candidates *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2 || !PyList_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "add(successors: list, parent: int)");
        return NULL;
    }
    PyObject *successors = args[0];
    uint64_t parent = PyLong_AsUnsignedLongLong(args[1]);
    if (parent == (uint64_t)-1 && PyErr_Occurred()) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(successors); i++) {
        PyObject *pair = PyList_GET_ITEM(successors, i);
        PyObject *state;
        if (PyTuple_Check(pair) && PyTuple_GET_SIZE(pair) == 2) {
            state = Py_NewRef(PyTuple_GET_ITEM(pair, 1));
        } else if ((state = PySequence_GetItem(pair, 1)) == NULL) {
            return NULL;
        }
        uint64_t fp;
        int status = fingerprint_value(state, &fp);
        if (status == 0) {
            status = candidates_offer(self, fp, parent, state);
        }
        Py_DECREF(state);
        if (status < 0) {
            return NULL;
        }
    }
    Py_RETURN_NONE;
}

static PyObject *candidates_take(Candidates *self, PyObject *Py_UNUSED(ignored)) {
    PyObject *fps = PyBytes_FromStringAndSize((const char *)self->fps, self->count * (Py_ssize_t)sizeof(uint64_t));
    PyObject *parents =
        PyBytes_FromStringAndSize((const char *)self->parents, self->count * (Py_ssize_t)sizeof(uint64_t));
    PyObject *out = fps == NULL || parents == NULL ? NULL : PyTuple_Pack(3, fps, parents, self->states);
    Py_XDECREF(fps);
    Py_XDECREF(parents);
    return out;
}

static int candidates_init(Candidates *self, PyObject *args, PyObject *kwds) {
    if (PyTuple_GET_SIZE(args) != 0 || (kwds != NULL && PyDict_GET_SIZE(kwds) != 0)) {
        PyErr_SetString(PyExc_TypeError, "Candidates() takes no arguments");
        return -1;
    }
    Py_XSETREF(self->states, PyList_New(0));
    return self->states == NULL ? -1 : 0;
}

static void candidates_dealloc(Candidates *self) {
    PyMem_Free(self->table);
    PyMem_Free(self->fps);
    PyMem_Free(self->parents);
    Py_XDECREF(self->states);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static Py_ssize_t candidates_len(Candidates *self) { return self->count; }

static PyMethodDef candidates_methods[] = {
    {"add", (PyCFunction)(void (*)(void))candidates_add, METH_FASTCALL,
     "add(successors, parent): offer each (action, state) of successors, generated by parent."},
    {"take", (PyCFunction)candidates_take, METH_NOARGS,
     "take() -> (fingerprints, parents, states): native uint64 bytes, bytes, list; first met first."},
    {NULL, NULL, 0, NULL},
};

static PySequenceMethods candidates_as_sequence = {.sq_length = (lenfunc)candidates_len};

static PyTypeObject CandidatesType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "kmc.checker.storage._fingerprint.Candidates",
    .tp_basicsize = sizeof(Candidates),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Candidates(): per fingerprint of a successor, its least parent and the successor it gave.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)candidates_init,
    .tp_dealloc = (destructor)candidates_dealloc,
    .tp_methods = candidates_methods,
    .tp_as_sequence = &candidates_as_sequence,
};

static PyMethodDef methods[] = {
    {"fingerprint", (PyCFunction)fingerprint, METH_O, "fingerprint(value) -> int: the value's 64-bit fingerprint."},
    {"set_fallback", (PyCFunction)set_fallback, METH_O,
     "set_fallback(function): what fingerprints the types C leaves to Python."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_fingerprint", "The state fingerprints of fingerprint.py, in C.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__fingerprint(void) {
#if PY_BIG_ENDIAN
    PyErr_SetString(PyExc_ImportError, "the C fingerprints read words little-endian: the Python ones run instead");
    return NULL;
#endif
    frozenset_cache = PyDict_New();
    identity_cache = PyMem_Calloc(IDENTITY_SLOTS, sizeof(Slot));
    if (frozenset_cache == NULL || identity_cache == NULL) {
        return NULL;
    }
    if (PyType_Ready(&CandidatesType) < 0) {
        return NULL;
    }
    PyObject *m = PyModule_Create(&module);
    if (m != NULL && PyModule_AddObjectRef(m, "Candidates", (PyObject *)&CandidatesType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
