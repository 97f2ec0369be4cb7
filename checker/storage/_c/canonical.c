/* The canonical encoding of checker/storage/fingerprint.py, in C, for the types states are mostly made of.
 *
 * encode(value, fallback) returns the same bytes as fingerprint._encode(value): tuples (NamedTuples
 * included), sets and frozensets (elements sorted by their encodings), ints that fit in 64 bits,
 * bools, strs, bytes and None are encoded here; anything else (an Enum, a dataclass, a mapping, a
 * float, a big int) is handed to fallback(value), which returns its encoding as bytes.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char *data;
    Py_ssize_t len;
    Py_ssize_t cap;
    int owned; /* data is on the heap (else on the caller's stack, copied out when outgrown) */
} Buffer;

static int reserve(Buffer *buf, Py_ssize_t extra) {
    if (buf->len + extra <= buf->cap) {
        return 0;
    }
    Py_ssize_t cap = buf->cap ? buf->cap : 256;
    while (cap < buf->len + extra) {
        cap *= 2;
    }
    char *data = buf->owned ? PyMem_Realloc(buf->data, (size_t)cap) : PyMem_Malloc((size_t)cap);
    if (data == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    if (!buf->owned && buf->len) {
        memcpy(data, buf->data, (size_t)buf->len);
    }
    buf->owned = 1;
    buf->data = data;
    buf->cap = cap;
    return 0;
}

static int put(Buffer *buf, const void *src, Py_ssize_t n) {
    if (reserve(buf, n) < 0) {
        return -1;
    }
    memcpy(buf->data + buf->len, src, (size_t)n);
    buf->len += n;
    return 0;
}

/* A tag byte and a little-endian 32-bit length, as struct.pack("<I") writes it. */
static int put_header(Buffer *buf, char tag, Py_ssize_t n) {
    if (n > UINT32_MAX) {
        PyErr_SetString(PyExc_OverflowError, "collection too large to fingerprint");
        return -1;
    }
    unsigned char head[5];
    uint32_t len = (uint32_t)n;
    head[0] = (unsigned char)tag;
    for (int i = 0; i < 4; i++) {
        head[1 + i] = (unsigned char)(len >> (8 * i));
    }
    return put(buf, head, 5);
}

static int put_int64(Buffer *buf, long long value) {
    unsigned char out[9];
    uint64_t bits = (uint64_t)value;
    out[0] = 'i';
    for (int i = 0; i < 8; i++) {
        out[1 + i] = (unsigned char)(bits >> (8 * i));
    }
    return put(buf, out, 9);
}

/* *frail is set when a value's encoding may change while the object lives on: a mutable set, or
 * anything the fallback encodes (a mapping, a dataclass that is not frozen...). */
static int encode(Buffer *buf, PyObject *value, PyObject *fallback, int depth, int *frail);

#define FROZENSET_CACHE_LIMIT (1 << 16)
static PyObject *frozenset_cache; /* frozenset -> its encoding (bytes) */

typedef struct {
    const char *base; /* the buffer's data when sorting: offsets are turned into pointers */
    Py_ssize_t offset;
    Py_ssize_t len;
} Item;

static int compare_items(const void *a, const void *b) {
    const Item *x = a, *y = b;
    Py_ssize_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->base + x->offset, y->base + y->offset, (size_t)n);
    if (c != 0) {
        return c;
    }
    return (x->len > y->len) - (x->len < y->len);
}

static void sort_items(Item *items, Py_ssize_t n) {
    if (n > 16) {
        qsort(items, (size_t)n, sizeof(Item), compare_items);
        return;
    }
    for (Py_ssize_t i = 1; i < n; i++) { /* sets in states are small: insertion sort wins */
        Item item = items[i];
        Py_ssize_t j = i;
        while (j > 0 && compare_items(&items[j - 1], &item) > 0) {
            items[j] = items[j - 1];
            j--;
        }
        items[j] = item;
    }
}

#define SMALL_SET 32
#define SMALL_SCRATCH 1024

/* Elements are encoded one after another into scratch, then copied out in sorted order. Small
 * sets (the usual case) use the stack; the buffer moves to the heap only if it outgrows it. */
static int encode_set(Buffer *buf, PyObject *value, PyObject *fallback, int depth, int *frail) {
    Py_ssize_t n = PySet_GET_SIZE(value);
    if (put_header(buf, '{', n) < 0) {
        return -1;
    }
    if (n == 0) {
        return 0;
    }
    Item small_items[SMALL_SET];
    char small_scratch[SMALL_SCRATCH];
    Item *items = small_items;
    if (n > SMALL_SET) {
        items = PyMem_Malloc((size_t)n * sizeof(Item));
        if (items == NULL) {
            PyErr_NoMemory();
            return -1;
        }
    }
    Buffer scratch = {small_scratch, 0, SMALL_SCRATCH, 0};
    Py_ssize_t i = 0;
    int status = 0;
#if PY_VERSION_HEX < 0x030D0000
    Py_ssize_t pos = 0;
    PyObject *key;
    Py_hash_t hash;
    while (_PySet_NextEntry(value, &pos, &key, &hash)) {
        Py_INCREF(key);
#else
    PyObject *iter = PyObject_GetIter(value);
    if (iter == NULL) {
        status = -1;
    }
    PyObject *key;
    while (status == 0 && (key = PyIter_Next(iter)) != NULL) {
#endif
        if (i >= n) {
            Py_DECREF(key);
            PyErr_SetString(PyExc_RuntimeError, "set changed size during fingerprinting");
            status = -1;
            break;
        }
        items[i].offset = scratch.len;
        int failed = encode(&scratch, key, fallback, depth + 1, frail);
        Py_DECREF(key);
        if (failed < 0) {
            status = -1;
            break;
        }
        items[i].len = scratch.len - items[i].offset;
        i++;
    }
#if PY_VERSION_HEX >= 0x030D0000
    Py_XDECREF(iter);
    if (status == 0 && PyErr_Occurred()) {
        status = -1;
    }
#endif
    if (status == 0) {
        for (Py_ssize_t k = 0; k < i; k++) {
            items[k].base = scratch.data;
        }
        sort_items(items, i);
        if (reserve(buf, scratch.len) < 0) {
            status = -1;
        } else {
            for (Py_ssize_t k = 0; k < i; k++) {
                memcpy(buf->data + buf->len, scratch.data + items[k].offset, (size_t)items[k].len);
                buf->len += items[k].len;
            }
        }
    }
    if (items != small_items) {
        PyMem_Free(items);
    }
    if (scratch.owned) {
        PyMem_Free(scratch.data);
    }
    return status;
}

static int encode_tuple(Buffer *buf, PyObject *value, PyObject *fallback, int depth, int *frail);
#define IDENTITY_MAX_BYTES 240 /* the longest encoding the identity cache keeps (see below) */
typedef struct Slot {
    PyObject *value;
    uint32_t len;
    char encoded[IDENTITY_MAX_BYTES];
} Slot;
static Slot *slot_of(PyObject *value);
static void keep_in_slot(Slot *slot, PyObject *value, const char *encoded, Py_ssize_t len);

static int encode_by_fallback(Buffer *buf, PyObject *value, PyObject *fallback, int *frail) {
    *frail = 1;
    PyObject *encoded = PyObject_CallOneArg(fallback, value);
    if (encoded == NULL) {
        return -1;
    }
    if (!PyBytes_Check(encoded)) {
        Py_DECREF(encoded);
        PyErr_SetString(PyExc_TypeError, "the fallback encoder must return bytes");
        return -1;
    }
    int status = put(buf, PyBytes_AS_STRING(encoded), PyBytes_GET_SIZE(encoded));
    Py_DECREF(encoded);
    return status;
}

static int encode(Buffer *buf, PyObject *value, PyObject *fallback, int depth, int *frail) {
    if (depth > 500) {
        PyErr_SetString(PyExc_RecursionError, "state nested too deeply to fingerprint");
        return -1;
    }
    if (PyLong_CheckExact(value) || PyBool_Check(value)) {
        int overflow = 0;
        long long v = PyLong_AsLongLongAndOverflow(value, &overflow);
        if (overflow == 0) {
            if (v == -1 && PyErr_Occurred()) {
                return -1;
            }
            return put_int64(buf, v);
        }
        return encode_by_fallback(buf, value, fallback, frail);
    }
    if (PyUnicode_CheckExact(value)) {
        Py_ssize_t n;
        const char *text = PyUnicode_AsUTF8AndSize(value, &n);
        if (text == NULL) {
            return -1;
        }
        if (put_header(buf, 's', n) < 0) {
            return -1;
        }
        return put(buf, text, n);
    }
    if (value == Py_None) {
        return put(buf, "N", 1);
    }
    if (PyTuple_Check(value)) {
        return encode_tuple(buf, value, fallback, depth, frail);
    }
    if (PyFrozenSet_CheckExact(value)) {
        /* The same frozenset as lately (states share them): no lookup by value, no comparison. */
        Slot *slot = slot_of(value);
        if (slot->value == value) {
            return put(buf, slot->encoded, slot->len);
        }
        /* A frozenset keeps its hash, so looking its encoding up costs little: states share them. */
        PyObject *cached = PyDict_GetItemWithError(frozenset_cache, value);
        if (cached != NULL) {
            keep_in_slot(slot, value, PyBytes_AS_STRING(cached), PyBytes_GET_SIZE(cached));
            return put(buf, PyBytes_AS_STRING(cached), PyBytes_GET_SIZE(cached));
        }
        if (PyErr_Occurred()) {
            return -1;
        }
        Py_ssize_t start = buf->len;
        int elements_frail = 0;
        if (encode_set(buf, value, fallback, depth, &elements_frail) < 0) {
            return -1;
        }
        if (elements_frail) { /* an element's encoding may change: not one to keep */
            *frail = 1;
            return 0;
        }
        PyObject *encoded = PyBytes_FromStringAndSize(buf->data + start, buf->len - start);
        if (encoded == NULL) {
            return -1;
        }
        if (PyDict_GET_SIZE(frozenset_cache) >= FROZENSET_CACHE_LIMIT) {
            PyDict_Clear(frozenset_cache);
        }
        keep_in_slot(slot, value, PyBytes_AS_STRING(encoded), PyBytes_GET_SIZE(encoded));
        int status = PyDict_SetItem(frozenset_cache, value, encoded);
        Py_DECREF(encoded);
        return status;
    }
    if (PyAnySet_Check(value)) {
        *frail = 1;
        return encode_set(buf, value, fallback, depth, frail);
    }
    if (PyBytes_CheckExact(value)) {
        if (put_header(buf, 'b', PyBytes_GET_SIZE(value)) < 0) {
            return -1;
        }
        return put(buf, PyBytes_AS_STRING(value), PyBytes_GET_SIZE(value));
    }
    return encode_by_fallback(buf, value, fallback, frail);
}

/* The encodings of recently seen tuples and frozensets, by the object's address. A successor
 * shares most of its parts with the state it came from (the model rebuilds only what an action
 * changed), so the siblings of a successor find their parts here. A slot holds a reference to its
 * object: while it is there, no other object can have that address. Only parts whose encoding
 * cannot change are kept (a tuple is immutable, but what it holds need not be); small tuples
 * cost less to encode than to keep. */
#define IDENTITY_SLOTS 4096
#define IDENTITY_MIN_BYTES 32
#define IDENTITY_MAX_DEPTH 2

static Slot *identity_cache; /* IDENTITY_SLOTS of them */

static Slot *slot_of(PyObject *value) {
    uintptr_t address = (uintptr_t)value;
    return &identity_cache[((address >> 4) ^ (address >> 16)) % IDENTITY_SLOTS];
}

static int encode_tuple(Buffer *buf, PyObject *value, PyObject *fallback, int depth, int *frail) {
    /* A whole state is seldom met twice; its deepest parts are small. */
    Slot *slot = depth > 0 && depth <= IDENTITY_MAX_DEPTH ? slot_of(value) : NULL;
    if (slot != NULL && slot->value == value) {
        return put(buf, slot->encoded, slot->len);
    }
    Py_ssize_t n = PyTuple_GET_SIZE(value);
    Py_ssize_t start = buf->len;
    if (put_header(buf, '(', n) < 0) {
        return -1;
    }
    int items_frail = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (encode(buf, PyTuple_GET_ITEM(value, i), fallback, depth + 1, &items_frail) < 0) {
            return -1;
        }
    }
    if (items_frail) {
        *frail = 1;
        return 0;
    }
    Py_ssize_t len = buf->len - start;
    if (slot != NULL && len >= IDENTITY_MIN_BYTES) {
        keep_in_slot(slot, value, buf->data + start, len);
    }
    return 0;
}

static void keep_in_slot(Slot *slot, PyObject *value, const char *encoded, Py_ssize_t len) {
    if (len > IDENTITY_MAX_BYTES) {
        return;
    }
    /* The slot is whole before the old value is released (its release runs no encoding, but a
     * subclass's __del__ could). */
    PyObject *old = slot->value;
    slot->value = NULL;
    memcpy(slot->encoded, encoded, (size_t)len);
    slot->len = (uint32_t)len;
    slot->value = Py_NewRef(value);
    Py_XDECREF(old);
}

/* Encodes value into buf (which starts on the caller's stack); -1 with an exception set. */
static int encode_value(Buffer *buf, PyObject *value, PyObject *fallback) {
    int frail = 0;
    return encode(buf, value, fallback, 0, &frail);
}

static PyObject *canonical_encode(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "encode(value, fallback) takes two arguments");
        return NULL;
    }
    char small[4096];
    Buffer buf = {small, 0, sizeof small, 0};
    PyObject *out = NULL;
    if (encode_value(&buf, args[0], args[1]) == 0) {
        out = PyBytes_FromStringAndSize(buf.data, buf.len);
    }
    if (buf.owned) {
        PyMem_Free(buf.data);
    }
    return out;
}

static PyMethodDef methods[] = {
    {"encode", (PyCFunction)(void (*)(void))canonical_encode, METH_FASTCALL,
     "encode(value, fallback) -> bytes: the canonical encoding of value."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_canonical", "The canonical state encoding of fingerprint.py, in C.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__canonical(void) {
    frozenset_cache = PyDict_New();
    identity_cache = PyMem_Calloc(IDENTITY_SLOTS, sizeof(Slot));
    if (frozenset_cache == NULL || identity_cache == NULL) {
        return NULL;
    }
    PyObject *m = PyModule_Create(&module);
    return m;
}
