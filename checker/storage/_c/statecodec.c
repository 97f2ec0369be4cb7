/* A compact byte form of a list of states, and back, for the levels a search holds or spills.
 *
 * States are made of None, bools, ints, strs, bytes, tuples, NamedTuples and frozensets. Each
 * value is one opcode byte and its payload: ints as zigzag varints, a NamedTuple as the index of
 * its class in a table the caller keeps (the encoder appends a class it has not met), containers
 * as a count and their items. A str, bytes, tuple or frozenset met again within one call is
 * written as a reference to its first occurrence: a successor shares most of its parts with its
 * siblings, so a level's states cost a few dozen bytes each instead of a few hundred as objects.
 * Anything else (an Enum, a big int, a dataclass) goes through the caller's fallback (pickle).
 * Decoding rebuilds equal values of the same types; each shared part is one object again.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

enum {
    OP_NONE = 0,
    OP_TRUE = 1,
    OP_FALSE = 2,
    OP_INT = 3,
    OP_STR = 4,
    OP_TUPLE = 5,
    OP_NAMED = 6,
    OP_FROZENSET = 7,
    OP_REF = 8,
    OP_OTHER = 9,
    OP_BYTES = 10,
};

#define MAX_DEPTH 900 /* about pickle's own limit */

/* -- encoding ----------------------------------------------------------------------------------- */
typedef struct {
    char *data;
    Py_ssize_t len, cap;
} Out;

typedef struct {
    PyObject *key;
    Py_ssize_t index;
} Seen;

typedef struct {
    Out out;
    Seen *seen; /* open addressing by address: the objects met, by their reference number */
    Py_ssize_t seen_cap, seen_len, next_ref;
    PyObject *types;    /* list of the NamedTuple classes, by index */
    PyObject *fallback; /* value -> bytes */
} Encoder;

static int grow(Out *o, Py_ssize_t more) {
    if (o->len + more <= o->cap) {
        return 0;
    }
    Py_ssize_t cap = o->cap ? o->cap : 1 << 16;
    while (cap < o->len + more) {
        cap *= 2;
    }
    char *data = PyMem_Realloc(o->data, (size_t)cap);
    if (data == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    o->data = data;
    o->cap = cap;
    return 0;
}

static inline int put_byte(Out *o, uint8_t b) {
    if (o->len == o->cap && grow(o, 1) < 0) {
        return -1;
    }
    o->data[o->len++] = (char)b;
    return 0;
}

static int put_varint(Out *o, uint64_t v) {
    if (grow(o, 10) < 0) {
        return -1;
    }
    while (v >= 0x80) {
        o->data[o->len++] = (char)(v | 0x80);
        v >>= 7;
    }
    o->data[o->len++] = (char)v;
    return 0;
}

static int put_bytes(Out *o, const char *data, Py_ssize_t n) {
    if (put_varint(o, (uint64_t)n) < 0 || grow(o, n) < 0) {
        return -1;
    }
    memcpy(o->data + o->len, data, (size_t)n);
    o->len += n;
    return 0;
}

static inline size_t slot_for(PyObject *key, Py_ssize_t cap) {
    uintptr_t a = (uintptr_t)key;
    return (size_t)(((a >> 4) ^ (a >> 20)) * 0x9E3779B97F4A7C15ULL) & (size_t)(cap - 1);
}

/* The reference number of an object met before in this call, or -1. */
static Py_ssize_t seen_index(Encoder *e, PyObject *key) {
    if (e->seen_cap == 0) {
        return -1;
    }
    size_t i = slot_for(key, e->seen_cap);
    while (e->seen[i].key != NULL) {
        if (e->seen[i].key == key) {
            return e->seen[i].index;
        }
        i = (i + 1) & (size_t)(e->seen_cap - 1);
    }
    return -1;
}

static int remember(Encoder *e, PyObject *key) {
    Py_ssize_t index = e->next_ref++;
    if (2 * (e->seen_len + 1) > e->seen_cap) {
        Py_ssize_t cap = e->seen_cap ? 2 * e->seen_cap : 1 << 12;
        Seen *table = PyMem_Calloc((size_t)cap, sizeof(Seen));
        if (table == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        for (Py_ssize_t j = 0; j < e->seen_cap; j++) {
            if (e->seen[j].key != NULL) {
                size_t i = slot_for(e->seen[j].key, cap);
                while (table[i].key != NULL) {
                    i = (i + 1) & (size_t)(cap - 1);
                }
                table[i] = e->seen[j];
            }
        }
        PyMem_Free(e->seen);
        e->seen = table;
        e->seen_cap = cap;
    }
    size_t i = slot_for(key, e->seen_cap);
    while (e->seen[i].key != NULL) {
        i = (i + 1) & (size_t)(e->seen_cap - 1);
    }
    e->seen[i].key = key;
    e->seen[i].index = index;
    e->seen_len++;
    return 0;
}


/* A NamedTuple (a Python class over tuple with _fields and no instance dict), which decoding can
 * rebuild from its items alone. A C struct sequence (time.struct_time) also subclasses tuple but
 * keeps fields beyond its items: it goes through the fallback. */
static int is_named_tuple(PyTypeObject *type) {
    if (type->tp_dictoffset != 0 || type->tp_basicsize != PyTuple_Type.tp_basicsize ||
        type->tp_itemsize != PyTuple_Type.tp_itemsize) {
        return 0;
    }
    PyObject *fields = PyObject_GetAttrString((PyObject *)type, "_fields");
    if (fields == NULL) {
        PyErr_Clear();
        return 0;
    }
    int ok = PyTuple_Check(fields);
    Py_DECREF(fields);
    return ok;
}

/* A tuple subclass's number in the table (appended when it is a NamedTuple met for the first time);
 * -1 when it is not a NamedTuple, -2 with an exception set. */
static Py_ssize_t named_index(Encoder *e, PyTypeObject *type) {
    Py_ssize_t n = PyList_GET_SIZE(e->types);
    for (Py_ssize_t i = 0; i < n; i++) {
        if (PyList_GET_ITEM(e->types, i) == (PyObject *)type) {
            return i;
        }
    }
    if (!is_named_tuple(type)) {
        return -1;
    }
    return PyList_Append(e->types, (PyObject *)type) < 0 ? -2 : n;
}

static int encode(Encoder *e, PyObject *v, int depth);

static int encode_other(Encoder *e, PyObject *v) {
    PyObject *blob = PyObject_CallOneArg(e->fallback, v);
    if (blob == NULL) {
        return -1;
    }
    if (!PyBytes_Check(blob)) {
        Py_DECREF(blob);
        PyErr_SetString(PyExc_TypeError, "the codec's fallback must return bytes");
        return -1;
    }
    int rc = put_byte(&e->out, OP_OTHER) < 0 ? -1 : put_bytes(&e->out, PyBytes_AS_STRING(blob), PyBytes_GET_SIZE(blob));
    Py_DECREF(blob);
    return rc < 0 ? -1 : remember(e, v); /* met again: a reference, as pickle shares it */
}

static int encode_items(Encoder *e, PyObject *seq, int depth) {
    Py_ssize_t n = PyTuple_GET_SIZE(seq);
    if (put_varint(&e->out, (uint64_t)n) < 0) {
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (encode(e, PyTuple_GET_ITEM(seq, i), depth + 1) < 0) {
            return -1;
        }
    }
    return 0;
}

static int encode(Encoder *e, PyObject *v, int depth) {
    if (depth > MAX_DEPTH) {
        PyErr_SetString(PyExc_RecursionError, "a state nested too deeply to encode");
        return -1;
    }
    if (v == Py_None) {
        return put_byte(&e->out, OP_NONE);
    }
    if (v == Py_True) {
        return put_byte(&e->out, OP_TRUE);
    }
    if (v == Py_False) {
        return put_byte(&e->out, OP_FALSE);
    }
    PyTypeObject *type = Py_TYPE(v);
    if (type == &PyLong_Type) {
        int overflow = 0;
        long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
        if (overflow) {
            return encode_other(e, v);
        }
        if (x == -1 && PyErr_Occurred()) {
            return -1;
        }
        uint64_t zigzag = ((uint64_t)x << 1) ^ (uint64_t)(x >> 63);
        return put_byte(&e->out, OP_INT) < 0 ? -1 : put_varint(&e->out, zigzag);
    }
    Py_ssize_t ref = seen_index(e, v);
    if (ref >= 0) {
        return put_byte(&e->out, OP_REF) < 0 ? -1 : put_varint(&e->out, (uint64_t)ref);
    }
    Py_ssize_t named = -1;
    if (type != &PyTuple_Type && PyTuple_Check(v) && (named = named_index(e, type)) == -2) {
        return -1;
    }
    int shareable = type == &PyUnicode_Type || type == &PyBytes_Type || type == &PyFrozenSet_Type ||
                    type == &PyTuple_Type || named >= 0;
    if (!shareable) {
        return encode_other(e, v);
    }
    int rc;
    if (type == &PyUnicode_Type) {
        Py_ssize_t n;
        const char *utf8 = PyUnicode_AsUTF8AndSize(v, &n);
        if (utf8 == NULL) { /* a lone surrogate: pickle writes it */
            if (!PyErr_ExceptionMatches(PyExc_UnicodeEncodeError)) {
                return -1;
            }
            PyErr_Clear();
            return encode_other(e, v);
        }
        rc = put_byte(&e->out, OP_STR) < 0 ? -1 : put_bytes(&e->out, utf8, n);
    } else if (type == &PyBytes_Type) {
        rc = put_byte(&e->out, OP_BYTES) < 0 ? -1 : put_bytes(&e->out, PyBytes_AS_STRING(v), PyBytes_GET_SIZE(v));
    } else if (type == &PyTuple_Type) {
        rc = put_byte(&e->out, OP_TUPLE) < 0 ? -1 : encode_items(e, v, depth);
    } else if (type == &PyFrozenSet_Type) {
        PyObject *items = PySequence_Tuple(v);
        if (items == NULL) {
            return -1;
        }
        rc = put_byte(&e->out, OP_FROZENSET) < 0 ? -1 : encode_items(e, items, depth);
        Py_DECREF(items);
    } else {
        rc = put_byte(&e->out, OP_NAMED) < 0 || put_varint(&e->out, (uint64_t)named) < 0 ? -1 : encode_items(e, v, depth);
    }
    return rc < 0 ? -1 : remember(e, v);
}

static PyObject *codec_encode(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3 || !PyList_Check(args[0]) || !PyList_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "encode(states: list, types: list, fallback) takes three arguments");
        return NULL;
    }
    /* a tuple of its own: whatever the fallback runs, every value met stays alive until the end */
    PyObject *states = PyList_AsTuple(args[0]);
    if (states == NULL) {
        return NULL;
    }
    Encoder e = {{NULL, 0, 0}, NULL, 0, 0, 0, args[1], args[2]};
    PyObject *result = NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(states);
    if (put_varint(&e.out, (uint64_t)n) == 0) {
        Py_ssize_t i = 0;
        for (; i < n; i++) {
            if (encode(&e, PyTuple_GET_ITEM(states, i), 0) < 0) {
                break;
            }
        }
        if (i == n) {
            result = PyBytes_FromStringAndSize(e.out.data, e.out.len);
        }
    }
    PyMem_Free(e.out.data);
    PyMem_Free(e.seen);
    Py_DECREF(states);
    return result;
}

/* -- decoding ----------------------------------------------------------------------------------- */
typedef struct {
    const unsigned char *p, *end;
    PyObject *refs;  /* list: the shared values, by reference number */
    PyObject *types; /* list of the NamedTuple classes */
    PyObject *loads; /* bytes -> value */
} Decoder;

static int malformed(void) {
    PyErr_SetString(PyExc_ValueError, "not a level written by this codec (truncated or damaged)");
    return -1;
}

static int get_varint(Decoder *d, uint64_t *out) {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (d->p >= d->end) {
            return malformed();
        }
        unsigned char b = *d->p++;
        v |= (uint64_t)(b & 0x7F) << shift;
        if (!(b & 0x80)) {
            *out = v;
            return 0;
        }
    }
    return malformed();
}

static int get_count(Decoder *d, Py_ssize_t *n) {
    uint64_t v;
    if (get_varint(d, &v) < 0) {
        return -1;
    }
    if (v > (uint64_t)(d->end - d->p)) { /* every item takes at least a byte */
        return malformed();
    }
    *n = (Py_ssize_t)v;
    return 0;
}

static PyObject *decode(Decoder *d, int depth);

static PyObject *shared(Decoder *d, PyObject *value) {
    if (value != NULL && PyList_Append(d->refs, value) < 0) {
        Py_DECREF(value);
        return NULL;
    }
    return value;
}

static PyObject *decode_items(Decoder *d, PyTypeObject *type, int depth) {
    Py_ssize_t n;
    if (get_count(d, &n) < 0) {
        return NULL;
    }
    PyObject *t = type == &PyTuple_Type ? PyTuple_New(n) : type->tp_alloc(type, n);
    if (t == NULL) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = decode(d, depth + 1);
        if (item == NULL) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, i, item);
    }
    return t;
}

static PyObject *decode(Decoder *d, int depth) {
    if (depth > MAX_DEPTH || d->p >= d->end) {
        malformed();
        return NULL;
    }
    unsigned char op = *d->p++;
    uint64_t v;
    Py_ssize_t n;
    switch (op) {
    case OP_NONE:
        Py_RETURN_NONE;
    case OP_TRUE:
        Py_RETURN_TRUE;
    case OP_FALSE:
        Py_RETURN_FALSE;
    case OP_INT:
        if (get_varint(d, &v) < 0) {
            return NULL;
        }
        return PyLong_FromLongLong((long long)(v >> 1) ^ -(long long)(v & 1));
    case OP_STR:
    case OP_BYTES:
    case OP_OTHER:
        if (get_count(d, &n) < 0) {
            return NULL;
        }
        const char *start = (const char *)d->p;
        d->p += n;
        if (op == OP_STR) {
            return shared(d, PyUnicode_DecodeUTF8(start, n, NULL));
        }
        if (op == OP_BYTES) {
            return shared(d, PyBytes_FromStringAndSize(start, n));
        }
        PyObject *blob = PyBytes_FromStringAndSize(start, n);
        if (blob == NULL) {
            return NULL;
        }
        PyObject *value = PyObject_CallOneArg(d->loads, blob);
        Py_DECREF(blob);
        return shared(d, value);
    case OP_TUPLE:
        return shared(d, decode_items(d, &PyTuple_Type, depth));
    case OP_NAMED: {
        if (get_varint(d, &v) < 0) {
            return NULL;
        }
        if (v >= (uint64_t)PyList_GET_SIZE(d->types)) {
            malformed();
            return NULL;
        }
        /* every entry was checked to be a NamedTuple class when the decoding began */
        return shared(d, decode_items(d, (PyTypeObject *)PyList_GET_ITEM(d->types, (Py_ssize_t)v), depth));
    }
    case OP_FROZENSET: {
        PyObject *items = decode_items(d, &PyTuple_Type, depth);
        if (items == NULL) {
            return NULL;
        }
        PyObject *set = PyFrozenSet_New(items);
        Py_DECREF(items);
        return shared(d, set);
    }
    case OP_REF:
        if (get_varint(d, &v) < 0) {
            return NULL;
        }
        if (v >= (uint64_t)PyList_GET_SIZE(d->refs)) {
            malformed();
            return NULL;
        }
        return Py_NewRef(PyList_GET_ITEM(d->refs, (Py_ssize_t)v));
    default:
        malformed();
        return NULL;
    }
}

static PyObject *codec_decode(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3 || !PyList_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "decode(data, types: list, loads) takes three arguments");
        return NULL;
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(args[1]); i++) {
        PyObject *type = PyList_GET_ITEM(args[1], i);
        if (!PyType_Check(type) || !PyType_IsSubtype((PyTypeObject *)type, &PyTuple_Type) ||
            !is_named_tuple((PyTypeObject *)type)) {
            PyErr_SetString(PyExc_TypeError, "the codec's type table holds something other than a NamedTuple class");
            return NULL;
        }
    }
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0) {
        return NULL;
    }
    Decoder d = {view.buf, (const unsigned char *)view.buf + view.len, PyList_New(0), args[1], args[2]};
    PyObject *states = NULL;
    Py_ssize_t n;
    if (d.refs != NULL && get_count(&d, &n) == 0 && (states = PyList_New(n)) != NULL) {
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *state = decode(&d, 0);
            if (state == NULL) {
                Py_CLEAR(states);
                break;
            }
            PyList_SET_ITEM(states, i, state);
        }
        if (states != NULL && d.p != d.end) {
            Py_CLEAR(states);
            malformed();
        }
    }
    Py_XDECREF(d.refs);
    PyBuffer_Release(&view);
    return states;
}

static PyMethodDef methods[] = {
    {"encode", (PyCFunction)(void (*)(void))codec_encode, METH_FASTCALL,
     "encode(states, types, fallback) -> bytes: the states in the codec's byte form."},
    {"decode", (PyCFunction)(void (*)(void))codec_decode, METH_FASTCALL,
     "decode(data, types, loads) -> list: the states encode wrote."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_statecodec", "A compact byte form of a level's states, in C.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__statecodec(void) { return PyModule_Create(&module); }
