# -*- coding: latin-1 -*-
NAME = "café"
