package model_test

import (
	"github.com/markerwave/markerwave/model"
	"github.com/markerwave/markerwave/model/tlcmodel"
)

func init() { model.LoadModel, model.SpecModule = tlcmodel.Load, tlcmodel.SpecModule }
