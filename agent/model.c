/* model.c: being written */
#include "model.h"
